"""Weight content shipped to a remote deployer: `deployer.SharedContentDescription` (spec 13).

The sender describes a variable's bytes with its offset in the variable region; the receiver
adds its own `var_mem_logic_base`, allocates `align512(total_length) + 1024` bytes of device
memory, writes the content 512 bytes in (past the front guard) and records the device address
for that logical address, so runtime resolution finds it.
"""

from __future__ import annotations

from streamalloc.ir.proto import var_manager_pb2 as pb
from streamalloc.memory.codes import FRONT_GUARD, MemType, hbm_block
from streamalloc.memory.desc import VarDesc
from streamalloc.memory.manager import VarManager
from streamalloc.memory.proto_desc import desc_to_proto
from streamalloc.memory.status import Status, VarMemoryExhausted, fail


def shared_content(session_id: int, node_name: str, data: bytes, offset: int, desc: VarDesc, *,
                   mem_type: int = MemType.HBM) -> pb.SharedContentDescription:
    """The message for one variable's content at `offset` of the variable region."""
    message = pb.SharedContentDescription(
        session_id=session_id, node_name=node_name, head_offset=0, total_length=len(data),
        current_offset=offset, mem_type=mem_type, om_content=data)
    desc_to_proto(desc, message.tensor_desc)
    return message


def receive_shared_content(manager: VarManager, message: pb.SharedContentDescription,
                           device_id: int = 0) -> int:
    """Place received content on the device; returns the data address (block + 512)."""
    memory = manager.mem_manager
    if memory is None:
        fail(Status.FAILED, "cannot receive shared content: no memory manager is attached")
    block = hbm_block(message.total_length)
    device = memory.malloc(message.mem_type or MemType.HBM, block, device_id)
    if device is None:
        fail(Status.MEMALLOC_FAILED, f"device {device_id} has no {block} bytes for the content "
                                     f"of {message.node_name!r}", VarMemoryExhausted)
    memory.write(device + FRONT_GUARD, bytes(message.om_content))
    logical = manager.var_mem_logic_base + message.current_offset
    resource = manager.resource
    if resource is not None:
        resource.update_dev_var_mgr_info(device_id)
        if logical in resource.dev_info_by_device[device_id]:
            resource.set_var_mgr_dev_addr(device_id, logical, device)
    return device + FRONT_GUARD

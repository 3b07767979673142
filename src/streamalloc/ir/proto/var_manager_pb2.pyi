from . import ge_ir_pb2 as _ge_ir_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VarAddrMgrInfo(_message.Message):
    __slots__ = ("desc", "address", "offset", "memory_type")
    DESC_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    desc: _ge_ir_pb2.TensorDescriptor
    address: int
    offset: int
    memory_type: int
    def __init__(self, desc: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ..., address: _Optional[int] = ..., offset: _Optional[int] = ..., memory_type: _Optional[int] = ...) -> None: ...

class VarDevAddrMgr(_message.Message):
    __slots__ = ("desc", "address", "dev_addr")
    DESC_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DEV_ADDR_FIELD_NUMBER: _ClassVar[int]
    desc: _ge_ir_pb2.TensorDescriptor
    address: int
    dev_addr: int
    def __init__(self, desc: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ..., address: _Optional[int] = ..., dev_addr: _Optional[int] = ...) -> None: ...

class SingleTransNodeInfo(_message.Message):
    __slots__ = ("node_type", "input", "output")
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    node_type: str
    input: _ge_ir_pb2.TensorDescriptor
    output: _ge_ir_pb2.TensorDescriptor
    def __init__(self, node_type: _Optional[str] = ..., input: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ..., output: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ...) -> None: ...

class TransNodeMultiInfo(_message.Message):
    __slots__ = ("node_info",)
    NODE_INFO_FIELD_NUMBER: _ClassVar[int]
    node_info: _containers.RepeatedCompositeFieldContainer[SingleTransNodeInfo]
    def __init__(self, node_info: _Optional[_Iterable[_Union[SingleTransNodeInfo, _Mapping]]] = ...) -> None: ...

class BroadcastInfo(_message.Message):
    __slots__ = ("var_name", "broadcast_name", "idx", "input_offset", "input_size", "output_offset", "output_size")
    VAR_NAME_FIELD_NUMBER: _ClassVar[int]
    BROADCAST_NAME_FIELD_NUMBER: _ClassVar[int]
    IDX_FIELD_NUMBER: _ClassVar[int]
    INPUT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    INPUT_SIZE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SIZE_FIELD_NUMBER: _ClassVar[int]
    var_name: str
    broadcast_name: str
    idx: int
    input_offset: int
    input_size: int
    output_offset: int
    output_size: int
    def __init__(self, var_name: _Optional[str] = ..., broadcast_name: _Optional[str] = ..., idx: _Optional[int] = ..., input_offset: _Optional[int] = ..., input_size: _Optional[int] = ..., output_offset: _Optional[int] = ..., output_size: _Optional[int] = ...) -> None: ...

class BroadcastMultiInfo(_message.Message):
    __slots__ = ("broadcast_info",)
    class BroadcastInfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: BroadcastInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[BroadcastInfo, _Mapping]] = ...) -> None: ...
    BROADCAST_INFO_FIELD_NUMBER: _ClassVar[int]
    broadcast_info: _containers.MessageMap[str, BroadcastInfo]
    def __init__(self, broadcast_info: _Optional[_Mapping[str, BroadcastInfo]] = ...) -> None: ...

class VarDescInfo(_message.Message):
    __slots__ = ("cur_var_tensor_desc_map", "var_to_trans_road", "changed_var_names", "staged_var_tensor_desc_map")
    class CurVarTensorDescMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _ge_ir_pb2.TensorDescriptor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ...) -> None: ...
    class VarToTransRoadEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TransNodeMultiInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TransNodeMultiInfo, _Mapping]] = ...) -> None: ...
    class StagedVarTensorDescMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _ge_ir_pb2.TensorDescriptor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ...) -> None: ...
    CUR_VAR_TENSOR_DESC_MAP_FIELD_NUMBER: _ClassVar[int]
    VAR_TO_TRANS_ROAD_FIELD_NUMBER: _ClassVar[int]
    CHANGED_VAR_NAMES_FIELD_NUMBER: _ClassVar[int]
    STAGED_VAR_TENSOR_DESC_MAP_FIELD_NUMBER: _ClassVar[int]
    cur_var_tensor_desc_map: _containers.MessageMap[str, _ge_ir_pb2.TensorDescriptor]
    var_to_trans_road: _containers.MessageMap[str, TransNodeMultiInfo]
    changed_var_names: _containers.RepeatedScalarFieldContainer[str]
    staged_var_tensor_desc_map: _containers.MessageMap[str, _ge_ir_pb2.TensorDescriptor]
    def __init__(self, cur_var_tensor_desc_map: _Optional[_Mapping[str, _ge_ir_pb2.TensorDescriptor]] = ..., var_to_trans_road: _Optional[_Mapping[str, TransNodeMultiInfo]] = ..., changed_var_names: _Optional[_Iterable[str]] = ..., staged_var_tensor_desc_map: _Optional[_Mapping[str, _ge_ir_pb2.TensorDescriptor]] = ...) -> None: ...

class VarMatchInfo(_message.Message):
    __slots__ = ("desc_info_before_compile", "desc_info_after_compile")
    DESC_INFO_BEFORE_COMPILE_FIELD_NUMBER: _ClassVar[int]
    DESC_INFO_AFTER_COMPILE_FIELD_NUMBER: _ClassVar[int]
    desc_info_before_compile: VarDescInfo
    desc_info_after_compile: VarDescInfo
    def __init__(self, desc_info_before_compile: _Optional[_Union[VarDescInfo, _Mapping]] = ..., desc_info_after_compile: _Optional[_Union[VarDescInfo, _Mapping]] = ...) -> None: ...

class VarResourceInfo(_message.Message):
    __slots__ = ("var_offset_map", "var_addr_mgr_map", "cur_var_tensor_desc_map", "var_to_trans_road", "var_names_to_changed_graph_id", "var_names_to_allocated_graph_id", "var_broad_cast_info", "var_dev_addr_mgr_map")
    class VarOffsetMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    class VarAddrMgrMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: VarAddrMgrInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[VarAddrMgrInfo, _Mapping]] = ...) -> None: ...
    class CurVarTensorDescMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _ge_ir_pb2.TensorDescriptor
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ...) -> None: ...
    class VarToTransRoadEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TransNodeMultiInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TransNodeMultiInfo, _Mapping]] = ...) -> None: ...
    class VarNamesToChangedGraphIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class VarNamesToAllocatedGraphIdEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class VarBroadCastInfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: BroadcastMultiInfo
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[BroadcastMultiInfo, _Mapping]] = ...) -> None: ...
    class VarDevAddrMgrMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: VarDevAddrMgr
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[VarDevAddrMgr, _Mapping]] = ...) -> None: ...
    VAR_OFFSET_MAP_FIELD_NUMBER: _ClassVar[int]
    VAR_ADDR_MGR_MAP_FIELD_NUMBER: _ClassVar[int]
    CUR_VAR_TENSOR_DESC_MAP_FIELD_NUMBER: _ClassVar[int]
    VAR_TO_TRANS_ROAD_FIELD_NUMBER: _ClassVar[int]
    VAR_NAMES_TO_CHANGED_GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    VAR_NAMES_TO_ALLOCATED_GRAPH_ID_FIELD_NUMBER: _ClassVar[int]
    VAR_BROAD_CAST_INFO_FIELD_NUMBER: _ClassVar[int]
    VAR_DEV_ADDR_MGR_MAP_FIELD_NUMBER: _ClassVar[int]
    var_offset_map: _containers.ScalarMap[int, int]
    var_addr_mgr_map: _containers.MessageMap[str, VarAddrMgrInfo]
    cur_var_tensor_desc_map: _containers.MessageMap[str, _ge_ir_pb2.TensorDescriptor]
    var_to_trans_road: _containers.MessageMap[str, TransNodeMultiInfo]
    var_names_to_changed_graph_id: _containers.ScalarMap[str, int]
    var_names_to_allocated_graph_id: _containers.ScalarMap[str, int]
    var_broad_cast_info: _containers.MessageMap[int, BroadcastMultiInfo]
    var_dev_addr_mgr_map: _containers.MessageMap[int, VarDevAddrMgr]
    def __init__(self, var_offset_map: _Optional[_Mapping[int, int]] = ..., var_addr_mgr_map: _Optional[_Mapping[str, VarAddrMgrInfo]] = ..., cur_var_tensor_desc_map: _Optional[_Mapping[str, _ge_ir_pb2.TensorDescriptor]] = ..., var_to_trans_road: _Optional[_Mapping[str, TransNodeMultiInfo]] = ..., var_names_to_changed_graph_id: _Optional[_Mapping[str, int]] = ..., var_names_to_allocated_graph_id: _Optional[_Mapping[str, int]] = ..., var_broad_cast_info: _Optional[_Mapping[int, BroadcastMultiInfo]] = ..., var_dev_addr_mgr_map: _Optional[_Mapping[int, VarDevAddrMgr]] = ...) -> None: ...

class MemResourceInfo(_message.Message):
    __slots__ = ("total_size", "var_mem_size")
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    VAR_MEM_SIZE_FIELD_NUMBER: _ClassVar[int]
    total_size: int
    var_mem_size: int
    def __init__(self, total_size: _Optional[int] = ..., var_mem_size: _Optional[int] = ...) -> None: ...

class VarManagerInfo(_message.Message):
    __slots__ = ("version", "session_id", "device_id", "job_id", "graph_mem_max_size", "var_mem_max_size", "var_mem_logic_base", "use_max_mem_size", "var_resource", "mem_resource_map", "var_mem_auto_malloc")
    class MemResourceMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: MemResourceInfo
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[MemResourceInfo, _Mapping]] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    GRAPH_MEM_MAX_SIZE_FIELD_NUMBER: _ClassVar[int]
    VAR_MEM_MAX_SIZE_FIELD_NUMBER: _ClassVar[int]
    VAR_MEM_LOGIC_BASE_FIELD_NUMBER: _ClassVar[int]
    USE_MAX_MEM_SIZE_FIELD_NUMBER: _ClassVar[int]
    VAR_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    MEM_RESOURCE_MAP_FIELD_NUMBER: _ClassVar[int]
    VAR_MEM_AUTO_MALLOC_FIELD_NUMBER: _ClassVar[int]
    version: int
    session_id: int
    device_id: int
    job_id: int
    graph_mem_max_size: int
    var_mem_max_size: int
    var_mem_logic_base: int
    use_max_mem_size: int
    var_resource: VarResourceInfo
    mem_resource_map: _containers.MessageMap[int, MemResourceInfo]
    var_mem_auto_malloc: bool
    def __init__(self, version: _Optional[int] = ..., session_id: _Optional[int] = ..., device_id: _Optional[int] = ..., job_id: _Optional[int] = ..., graph_mem_max_size: _Optional[int] = ..., var_mem_max_size: _Optional[int] = ..., var_mem_logic_base: _Optional[int] = ..., use_max_mem_size: _Optional[int] = ..., var_resource: _Optional[_Union[VarResourceInfo, _Mapping]] = ..., mem_resource_map: _Optional[_Mapping[int, MemResourceInfo]] = ..., var_mem_auto_malloc: _Optional[bool] = ...) -> None: ...

class MultiVarManagerInfo(_message.Message):
    __slots__ = ("var_manager_info",)
    VAR_MANAGER_INFO_FIELD_NUMBER: _ClassVar[int]
    var_manager_info: _containers.RepeatedCompositeFieldContainer[VarManagerInfo]
    def __init__(self, var_manager_info: _Optional[_Iterable[_Union[VarManagerInfo, _Mapping]]] = ...) -> None: ...

class SharedContentDescription(_message.Message):
    __slots__ = ("session_id", "node_name", "head_offset", "total_length", "current_offset", "mem_type", "tensor_desc", "om_content")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    HEAD_OFFSET_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LENGTH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MEM_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_DESC_FIELD_NUMBER: _ClassVar[int]
    OM_CONTENT_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    node_name: str
    head_offset: int
    total_length: int
    current_offset: int
    mem_type: int
    tensor_desc: _ge_ir_pb2.TensorDescriptor
    om_content: bytes
    def __init__(self, session_id: _Optional[int] = ..., node_name: _Optional[str] = ..., head_offset: _Optional[int] = ..., total_length: _Optional[int] = ..., current_offset: _Optional[int] = ..., mem_type: _Optional[int] = ..., tensor_desc: _Optional[_Union[_ge_ir_pb2.TensorDescriptor, _Mapping]] = ..., om_content: _Optional[bytes] = ...) -> None: ...

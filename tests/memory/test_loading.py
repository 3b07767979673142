"""The emulator hook: a variable plan loaded into emulated device memory."""

from __future__ import annotations

import struct

import pytest
from memory.graphs import F32_4, build, tensor, weight

from streamalloc.ir.attrs import AttrValue, TensorValue
from streamalloc.memory import EmulatedMemory, VarMemoryExhausted
from streamalloc.memory.loading import load_into_device
from streamalloc.memory.plan import variable_plan


def test_weights_init_values_and_dedup() -> None:
    ones = struct.pack("<4f", 1, 1, 1, 1)
    init = AttrValue("tensor", TensorValue(F32_4, ones))
    g = build([
        {"name": "v", "type": "Variable", "outputs": [tensor((4,), _init_value=init)]},
        {"name": "c1", "type": "Constant", "outputs": [F32_4], "attrs": {"value": weight(ones)}},
        {"name": "c2", "type": "Constant", "outputs": [F32_4], "attrs": {"value": weight(ones)}},
        {"name": "k", "type": "Const", "outputs": [F32_4], "attrs": {"value": weight(b"k" * 16)}},
    ])
    memory = EmulatedMemory()
    loaded = load_into_device(variable_plan(g), memory, device_id=1)
    assert memory.read(loaded.address("v"), 16) == ones
    assert memory.read(loaded.address("k"), 16) == b"k" * 16
    assert loaded.address("c1") == loaded.address("c2")
    assert loaded.variables["c2"].shared_with == "c1"
    assert loaded.allocated_bytes["HBM"] == 3 * 1536 == memory.used(1)
    resource = loaded.manager.require_resource()
    assert [name for name, _ in resource.loaded_by_device[1]] == ["c1", "k"]
    assert loaded.summary().startswith("variables: 4 loaded on device 1 (3 own blocks")


def test_rdma_variables_get_pool_memory() -> None:
    g = build([{"name": "r", "type": "Variable", "outputs": [F32_4],
                "attrs": {"_output_memory_type": 1}}])
    memory = EmulatedMemory(rdma_pool_size=4096)
    loaded = load_into_device(variable_plan(g), memory)
    assert memory.device(0).rdma.block_of(loaded.address("r")) == (loaded.address("r"), 64)
    assert loaded.allocated_bytes == {"HBM": 0, "RDMA_HBM": 64, "HOST": 0}
    with pytest.raises(VarMemoryExhausted, match="RDMA_HBM pool"):
        load_into_device(variable_plan(g), EmulatedMemory())


def test_device_too_small() -> None:
    g = build([{"name": "big", "type": "Variable", "outputs": [tensor((4096,), "uint8")]}])
    with pytest.raises(VarMemoryExhausted) as err:
        load_into_device(variable_plan(g), EmulatedMemory(hbm_size=4096))
    assert err.value.exit_code == 4 and "needs 5632 bytes" in str(err.value)


def test_file_constant_without_its_file_loads_uninitialized(tmp_path: object) -> None:
    g = build([{"name": "f", "type": "FileConstant", "outputs": [F32_4],
                "attrs": {"location": "nowhere.bin"}}])
    loaded = load_into_device(variable_plan(g), EmulatedMemory())
    assert not loaded.variables["f"].initialized


class _Regions:
    def __init__(self) -> None:
        self.regions: dict[str, tuple[str, int, int]] = {}

    def place(self, name: str, mem_type: str, offset: int, size: int) -> None:
        self.regions[name] = (mem_type, offset, size)


def test_plan_loader_for_the_emulator() -> None:
    from streamalloc.memory.loading import PlanLoader
    same = {"value": weight(b"a" * 16)}
    g = build([
        {"name": "a", "type": "Constant", "outputs": [F32_4], "attrs": same},
        {"name": "b", "type": "Constant", "outputs": [F32_4], "attrs": same},
        {"name": "r1", "type": "Variable", "outputs": [F32_4], "attrs": {"_output_memory_type": 1}},
        {"name": "r2", "type": "Variable", "outputs": [F32_4], "attrs": {"_output_memory_type": 1}},
    ])
    loader, sink = PlanLoader(variable_plan(g)), _Regions()
    report = loader.load_into(sink)
    assert sink.regions == {"a": ("HBM", 0, 1536), "b": ("HBM", 0, 1536),
                            "r1": ("RDMA_HBM", 0, 64), "r2": ("RDMA_HBM", 64, 64)}
    assert report["count"] == 4 and report["own_blocks"] == 3 and report["initialized"] == 2
    assert report["allocated_bytes"] == {"HBM": 1536, "RDMA_HBM": 128, "HOST": 0}
    assert loader.loaded is not None and loader.loaded.address("a") == loader.loaded.address("b")
    try:  # the emulator's own protocol and memory, when that package is present
        from streamalloc.runtime_emu.memory import DeviceMemory, VariableLoader
    except ImportError:
        return
    assert isinstance(loader, VariableLoader)
    device = DeviceMemory()
    PlanLoader(variable_plan(g)).load_into(device)
    assert device.summary()["count"] == 4

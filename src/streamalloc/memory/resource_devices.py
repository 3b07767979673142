"""Per-device copies of the logical-to-device table (spec 10) and address containment (spec 7).

The resource keeps one logical table, `dev_info_by_logic`, filled at registration, and one copy
per device, `dev_info_by_device[d]`, which runtime resolution fills with device addresses. A copy
is created (or extended with missing logical addresses, keeping existing device addresses) on
every auto-malloc resolution for the device or by `update_dev_var_mgr_info`.
"""

from __future__ import annotations

from dataclasses import replace

from streamalloc.memory.records import DevVarInfo
from streamalloc.memory.resource_state import ResourceState
from streamalloc.memory.status import Status, fail


class ResourceDevices(ResourceState):
    """Device tables: sync, query, set device addresses, find the variable holding an address."""

    def update_dev_var_mgr_info(self, device_id: int) -> None:
        """Create the device's table from the logical one, or add the logical addresses it lacks."""
        table = self.dev_info_by_device.get(device_id)
        if table is None:
            self.dev_info_by_device[device_id] = dict(self.dev_info_by_logic)
            return
        for logical, info in self.dev_info_by_logic.items():
            table.setdefault(logical, info)

    def get_var_mgr_info(self, device_id: int, logical: int) -> DevVarInfo | None:
        """The device's row for a logical address; None without a table or row."""
        return self.dev_info_by_device.get(device_id, {}).get(logical)

    def set_var_mgr_dev_addr(self, device_id: int, logical: int, device: int | None) -> None:
        """Set (or clear, with None) the device address of a row; INTERNAL_ERROR if absent."""
        table = self.dev_info_by_device.get(device_id)
        if table is None or logical not in table:
            where = "has no device table" if table is None else f"has no row for {logical}"
            fail(Status.INTERNAL_ERROR, f"device {device_id} {where}")
        table[logical] = replace(table[logical], device=device)

    def check_logic_addr_valid(self, device_id: int, logical: int) -> tuple[int, int]:
        """(inner offset, variable's logical address) of an address strictly inside a variable.

        The range is exclusive at both ends: `entry < logical < entry + recorded size`. An exact
        hit on `entry` is the caller's exact lookup; FAILED when no row contains the address.
        """
        for base, info in self.dev_info_by_device.get(device_id, {}).items():
            if base < logical < base + info.desc.size:
                return logical - base, base
        fail(Status.FAILED, f"logical address {logical} is inside no variable on device "
                            f"{device_id}")

"""SpectrumSwitch components run under Pulumi mocks, and what they register as the engine sees it.

`register(switches)` runs one SpectrumSwitch per switch config (as __main__.py does) and returns
the run plus, per remote.Command, a switch_sim.Registration: its plain inputs and the options the
engine reads from the registration request (dependencies, ignoreChanges, deleteBeforeReplace).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from switch_sim import Registration

from components.switch.component import SpectrumSwitch, SpectrumSwitchArgs
from components.switch.model import SwitchConfig
from components.switch.plan import SwitchPlan, switch_plan
from tools.mockrun import LabMocks, RecordingMonitor, Run, run_under_mocks, unwrap_secrets

COMMAND = "command:remote:Command"


class OptionsMonitor(RecordingMonitor):
    """Also keeps each registration request, for the resource options the recorded inputs do not show."""

    def __init__(self) -> None:
        super().__init__(LabMocks())
        self.requests: dict[str, Any] = {}

    def RegisterResource(self, request):
        self.requests[request.name] = request
        return super().RegisterResource(request)


@dataclass
class SwitchRun:
    run: Run
    requests: dict[str, Any]

    def registrations(self, switch: str) -> list[Registration]:
        """The switch's Commands in registration order, as switch_sim.Engine takes them."""
        names = {r.urn: r.name for r in self.run.resources}
        component = self.run.named(switch)
        found = []
        for r in self.run.resources:
            if r.type != COMMAND or r.parent_urn != component.urn:
                continue
            request = self.requests[r.name]
            found.append(Registration(
                name=r.name,
                inputs=unwrap_secrets(r.inputs),
                depends_on=tuple(names[urn] for urn in request.dependencies),
                ignore_changes=tuple(request.ignoreChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
            ))
        return found


def planned(raw: dict) -> SwitchPlan:
    """A switch's facts from its stack-file entry, on bare metal (no vSphere section)."""
    return switch_plan(SwitchConfig.model_validate(raw), None)


def register(switches: list[SwitchPlan], passwords: dict[str, str] | None = None) -> SwitchRun:
    """One SpectrumSwitch per switch, as __main__.py registers them."""
    passwords = passwords or {sw.name: f"pw-{sw.name}" for sw in switches}
    monitor = OptionsMonitor()

    def program() -> None:
        for sw in switches:
            SpectrumSwitch(sw.name, SpectrumSwitchArgs(
                switch=sw, password=pulumi.Output.secret(passwords[sw.name])))

    run_under_mocks(program, monitor)
    return SwitchRun(Run(resources=monitor.recorded, outputs={}, stack="lab"), monitor.requests)

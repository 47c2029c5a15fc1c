"""The dynamic providers' tests' own fixtures: in-process managed objects on a recording stub.

lab-vcsim and the fixtures that start it (vcsim, si, conn_props) are shared with tests/vsphere:
tests/lab_vcsim.py and tests/conftest.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

# ---------------------------------------------------------------- in-process managed objects
#
# For behaviour no simulator shows (a host that accepts a change and does not apply it, a guest
# that shuts down when asked), tests put a real pyVmomi managed object on a recording stub:
# pyVmomi still type-checks each call, and the stub keeps the SOAP body it would have sent, so
# a test can assert the exact request.


@dataclass
class Call:
    method: str
    args: list
    soap: str

    def body(self) -> dict[str, object]:
        """The request's parameters as sent: element name -> text, or a dict for a data object."""
        import xml.etree.ElementTree as ET

        def plain(el):
            children = list(el)
            if not children:
                return el.text or ""
            out: dict = {}
            for child in children:
                out.setdefault(child.tag.split("}")[-1], []).append(plain(child))
            return {k: v[0] if len(v) == 1 else v for k, v in out.items()}

        envelope = ET.fromstring(self.soap)
        [request] = envelope.find("{http://schemas.xmlsoap.org/soap/envelope/}Body")
        return {child.tag.split("}")[-1]: plain(child) for child in request}


class RecordingStub:
    """A pyVmomi stub answering in-process from ``properties`` and ``methods``."""

    def __init__(self, properties: dict, methods: dict):
        from pyVmomi import SoapAdapter, VmomiSupport

        self._soap = SoapAdapter.SoapStubAdapterBase(version=VmomiSupport.newestVersions.GetName("vim"))
        self._soap.requestContext = {}  # set by SoapStubAdapter, read by SerializeRequest
        self.properties = properties
        self.methods = methods
        self.calls: list[Call] = []

    def InvokeMethod(self, mo, info, args):  # noqa: N802 - pyVmomi's stub interface
        soap = self._soap.SerializeRequest(mo, info, args).decode()
        self.calls.append(Call(info.wsdlName, list(args), soap))
        return self.methods[info.wsdlName](*args)

    def InvokeAccessor(self, mo, info):  # noqa: N802 - pyVmomi's stub interface
        return self.properties[info.name]


@pytest.fixture()
def fake_graphics(monkeypatch: pytest.MonkeyPatch):
    """A HostGraphicsManager in default ``shared`` mode with one per-GPU override, in process, so a
    test can make it misbehave."""
    from pyVmomi import vim

    from components.dynamic import hostops

    stub = RecordingStub(
        properties={
            "graphicsConfig": vim.host.GraphicsConfig(
                hostDefaultGraphicsType="shared",
                sharedPassthruAssignmentPolicy="performance",
                deviceType=[vim.host.GraphicsConfig.DeviceType(deviceId="0000:3b:00.0", graphicsType="sharedDirect")],
            )
        },
        methods={},
    )
    stub.methods["UpdateGraphicsConfig"] = lambda config: stub.properties.__setitem__("graphicsConfig", config)
    manager = vim.host.GraphicsManager("ha-graphics-manager", stub)
    monkeypatch.setattr(hostops, "graphics_manager", lambda host: manager)
    return stub


@pytest.fixture()
def recording_stub():
    """The RecordingStub class, for tests that build their own managed object."""
    return RecordingStub

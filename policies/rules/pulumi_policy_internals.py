"""Every place the pack relies on pulumi-policy's internals, in one module.

Checked against pulumi-policy 1.21.0 (the pin in policies/requirements.txt and requirements.txt).
``install()`` patches only that version: on any other, the SDK's own behaviour runs (secret values
reach the rules unwrapped, each request re-derives everything, every policy sees every resource)
and the pack prints one warning naming the installed version. On 1.21.0, ``check_sdk()`` names
each symbol below that is missing or has changed shape and ``install()`` refuses to run when one is
(tests/policies/test_pulumi_policy_internals.py runs it on the installed version, and fails on any
other version until this list has been re-checked). Each patch stands in for the upstream code of
pulumi/pulumi-policy sdk/python/lib/pulumi_policy/policy.py it names (``_PolicyAnalyzerServicer``'s
methods, ``deserialize_properties``) and sdk/python/lib/pulumi_policy/deserialize.py.

What the pack touches, and why there is no public way:

* ``pulumi_policy.policy.deserialize_properties`` (module global, looked up at each call by the
  servicer): replaced so secret values stay ``Secret`` objects. 1.21 strips the engine's secret
  wrapper before a validation runs (pulumi/pulumi-policy#241); a policy has no option to see it.
* ``pulumi_policy.deserialize._deserialize_property``: assets and archives inside properties are
  still decoded by the SDK's own function (there is no public per-value decoder).
* ``pulumi_policy.policy.json_format`` and ``pulumi_policy.policy.unknown_checking_proxy``
  (module globals): the servicer converts (``MessageToDict``), decodes and wraps a resource's
  properties once per policy, 22 times per resource here, and every resource once per stack
  policy in AnalyzeStack. Within one request each step is memoised (``request_memo``).
* ``pulumi_policy.policy._PolicyAnalyzerServicer``, the gRPC servicer ``PolicyPack`` builds and
  serves; the SDK has no hook around a request. Wrapped methods:

  - ``Analyze``, ``AnalyzeStack``: open and drop the request memo; Analyze also tells
    ``PoliciesByType`` which resource type is being judged, so the servicer's own loop runs only
    the policies that judge that type (each rule declares its types; see rules/declare.py).
  - ``Remediate``: answered at once, with the same empty response the SDK's loop would build,
    when no resource policy is at the ``remediate`` level (the engine sends every resource to
    Remediate before Analyze, so this is half of the pack's requests).
  - ``_configure_runtime_settings``: the servicer re-reads PULUMI_CONFIG and rebuilds the SDK's
    runtime settings (``inspect.signature`` included) at every request; the environment of a
    plugin process never changes, so it runs once.
  - ``_get_resource_options``, ``_get_provider_resource``: built once per request message
    instead of once per policy, the provider once per distinct provider (read-only values:
    options and the provider's proxied inputs).
  - ``_get_enforcement_level`` and the name-mangled ``_PolicyAnalyzerServicer__policies`` are
    read (not replaced) to decide the Remediate short cut exactly as the SDK's loop decides.

Also read: ``pulumi_policy.policy.proto.RemediateResponse`` (the empty answer) and
``pulumi_policy.deserialize.SPECIAL_SIG_KEY`` / ``SPECIAL_SECRET_SIG`` (checked equal to the
engine's signatures below).

Nothing downstream mutates the shared values: the rules only read them, through plain copies
(``props.plain``) shared the same way.
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Secret
from pulumi_policy.proxy import (  # noqa: F401 - read by the rules' property reader (props.py)
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

CHECKED_VERSION = "1.21.0"

# The engine's wire signatures (sdk/go/common/resource/sig in pulumi/pulumi).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"

_MARK = "_gpu_lab_patched"

# servicer method -> the parameters it takes in 1.21 (checked by number: wrappers may rename them)
_SERVICER_METHODS = {
    "Analyze": ("self", "request", "_context"),
    "AnalyzeStack": ("self", "request", "_context"),
    "Remediate": ("self", "request", "_context"),
    "_configure_runtime_settings": ("self",),
    "_get_resource_options": ("self", "request"),
    "_get_provider_resource": ("self", "request"),
    "_get_enforcement_level": ("self", "policy"),
}


def sdk_version() -> str:
    from pulumi_policy.version import VERSION  # pylint: disable=import-outside-toplevel

    return VERSION


def check_sdk() -> list[str]:
    """What of the above is missing or changed in the installed pulumi-policy (empty: all there)."""
    import pulumi_policy.deserialize as deser  # pylint: disable=import-outside-toplevel
    import pulumi_policy.policy as sdk  # pylint: disable=import-outside-toplevel

    problems = []

    def params(fn) -> tuple[str, ...]:
        fn = getattr(fn, "__wrapped__", fn)
        return tuple(inspect.signature(fn).parameters)

    if params(getattr(sdk, "deserialize_properties", None) or (lambda: None))[:2] != ("props", "proxy_secrets"):
        problems.append("pulumi_policy.policy.deserialize_properties(props, proxy_secrets)")
    if not callable(getattr(deser, "_deserialize_property", None)):
        problems.append("pulumi_policy.deserialize._deserialize_property")
    if getattr(deser, "SPECIAL_SIG_KEY", None) != SIG_KEY or getattr(deser, "SPECIAL_SECRET_SIG", None) != SECRET_SIG:
        problems.append("pulumi_policy.deserialize.SPECIAL_SIG_KEY / SPECIAL_SECRET_SIG (the engine's signatures)")
    if not isinstance(getattr(sdk, "proto", None), types.ModuleType) or not hasattr(sdk.proto, "RemediateResponse"):
        problems.append("pulumi_policy.policy.proto.RemediateResponse")
    if not callable(getattr(getattr(sdk, "json_format", None), "MessageToDict", None)):
        problems.append("pulumi_policy.policy.json_format.MessageToDict")
    if not callable(getattr(sdk, "unknown_checking_proxy", None)):
        problems.append("pulumi_policy.policy.unknown_checking_proxy")
    servicer = getattr(sdk, "_PolicyAnalyzerServicer", None)
    if servicer is None:
        problems.append("pulumi_policy.policy._PolicyAnalyzerServicer")
        return problems
    for name, expected in _SERVICER_METHODS.items():
        method = getattr(servicer, name, None)
        if method is None or len(params(method)) != len(expected):
            problems.append(f"pulumi_policy.policy._PolicyAnalyzerServicer.{name}({', '.join(expected)})")
    init = params(servicer.__init__)
    if init[:4] != ("self", "name", "version", "policies"):
        problems.append("pulumi_policy.policy._PolicyAnalyzerServicer.__init__(self, name, version, policies, ...)"
                        " (stores the policies as _PolicyAnalyzerServicer__policies)")
    return problems


# ---------------------------------------------------------------- wire -> python, secrets kept


def decode(props: dict[str, Any]) -> dict[str, Any]:
    """Engine properties (after MessageToDict) to Python values, keeping secrets as ``Secret``."""
    return {k: _decode(v) for k, v in props.items()}


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(e) for e in v]
    if isinstance(v, dict):
        if v.get(SIG_KEY) == SECRET_SIG:
            return Secret(_decode(v.get("value")))
        if SIG_KEY in v:
            # assets and archives: the SDK's own decoding is right for those
            from pulumi_policy.deserialize import _deserialize_property  # pylint: disable=import-outside-toplevel
            return _deserialize_property(v)
        return decode(v)
    return v


# ---------------------------------------------------------------- the per-request memo


class _RequestMemo(threading.local):
    """Values derived from one analyzer request, per gRPC worker thread, dropped when it ends.

    Keyed by the identity of their source object; the sources are held too, so no id is reused
    while the request runs. ``resource_type`` is the type an Analyze request judges (None
    otherwise: every policy is seen).
    """

    def __init__(self) -> None:
        self.entries: dict[tuple[str, Any], tuple[Any, Any]] | None = None
        self.resource_type: str | None = None

    def get(self, step: str, source: Any, derive: Callable[[Any], Any]) -> Any:
        if self.entries is None:  # outside a request: nothing to share
            return derive(source)
        key = (step, id(source))
        if key not in self.entries:
            self.entries[key] = (source, derive(source))
        return self.entries[key][1]

    def shared(self, step: str, key: Any, derive: Callable[[], Any]) -> Any:
        """One value per (step, key) for the rest of the request (a hashable key, compared by value)."""
        if self.entries is None:
            return derive()
        entry_key = (step, key)
        if entry_key not in self.entries:
            self.entries[entry_key] = (None, derive())
        return self.entries[entry_key][1]


request_memo = _RequestMemo()


# ---------------------------------------------------------------- policies by resource type


class PoliciesByType(list):
    """The pack's policy list; while an Analyze request runs, iterating it yields only the resource
    policies that judge the request's resource type, in their order (Analyze skips stack
    policies anyway).

    ``judges(policy, resource_type)`` is the rule modules' declaration. A resource policy without
    validation (remediation only) is always seen: the SDK reports it as not applicable.
    Everything else that iterates the list (PolicyPack's checks, GetAnalyzerInfo, AnalyzeStack,
    Remediate) sees every policy.
    """

    def __init__(self, policies: Iterable, judges: Callable[[Any, str], bool]) -> None:
        super().__init__(policies)
        self._judges = judges
        self._by_type: dict[str, list] = {}

    def for_type(self, resource_type: str) -> list:
        chosen = self._by_type.get(resource_type)
        if chosen is None:
            chosen = [p for p in list.__iter__(self) if isinstance(p, ResourceValidationPolicy)
                      and (not p.has_validation() or self._judges(p, resource_type))]
            self._by_type[resource_type] = chosen
        return chosen

    def __iter__(self) -> Iterator:
        resource_type = request_memo.resource_type
        if resource_type is None:
            return list.__iter__(self)
        return iter(self.for_type(resource_type))


# ---------------------------------------------------------------- install


_warned_versions: set[str] = set()


def install() -> bool:
    """Patch the running pulumi-policy as described above (call before building the PolicyPack; idempotent)
    and return True; on another version than CHECKED_VERSION patch nothing, warn once and return False."""
    installed = sdk_version()
    if installed != CHECKED_VERSION:
        if installed not in _warned_versions:
            _warned_versions.add(installed)
            print(f"warning: gpu-lab policy pack: pulumi-policy {installed} is installed; its patches "
                  f"(rules/pulumi_policy_internals.py) were checked against {CHECKED_VERSION} only, so the SDK's own "
                  "behaviour runs: secret values reach the rules unwrapped (plain-text checks cannot tell a "
                  "secret from a plain value) and requests are slower", file=sys.stderr)
        return False
    problems = check_sdk()
    if problems:
        raise RuntimeError(
            f"pulumi-policy {sdk_version()} differs from the {CHECKED_VERSION} the pack was written for: "
            + "; ".join(problems) + " changed or gone; secret detection would silently stop working "
            "(see policies/rules/pulumi_policy_internals.py)"
        )
    import pulumi_policy.policy as sdk  # pylint: disable=import-outside-toplevel

    if getattr(sdk.deserialize_properties, _MARK, False):
        return True
    original_deserialize = sdk.deserialize_properties
    json_format = sdk.json_format
    proxy = sdk.unknown_checking_proxy
    servicer = sdk._PolicyAnalyzerServicer  # pylint: disable=protected-access
    memo = request_memo

    def message_to_dict(message, *args, **kwargs):
        if args or kwargs:
            return json_format.MessageToDict(message, *args, **kwargs)
        return memo.get("dict", message, json_format.MessageToDict)

    def deserialize_properties(props, proxy_secrets=False):
        if proxy_secrets:  # remediation keeps the SDK's own secret-preserving path
            return original_deserialize(props, proxy_secrets)
        return memo.get("decoded", props, decode)

    def unknown_checking_proxy(props):
        return memo.get("proxy", props, proxy)

    def one_memo_per_request(handler, judged_type: Callable[[Any], str | None]):
        def serve(self, request, context):
            memo.entries, memo.resource_type = {}, judged_type(request)
            try:
                return handler(self, request, context)
            finally:
                memo.entries, memo.resource_type = None, None
        serve.__wrapped__ = handler  # type: ignore[attr-defined]
        return serve

    remediate = servicer.Remediate

    def remediate_only_when_asked(self, request, context):
        policies = list.__iter__(self._PolicyAnalyzerServicer__policies)  # pylint: disable=protected-access
        remediates = EnforcementLevel.REMEDIATE
        if not any(isinstance(p, ResourceValidationPolicy) and self._get_enforcement_level(p) == remediates
                   for p in policies):
            return sdk.proto.RemediateResponse()  # what the SDK's loop returns when it skips every policy
        return remediate(self, request, context)
    remediate_only_when_asked.__wrapped__ = remediate  # type: ignore[attr-defined]

    configure = servicer._configure_runtime_settings  # pylint: disable=protected-access
    configured = threading.Lock()
    done: list[bool] = []

    def configure_once(self):
        if done:
            return
        with configured:
            if not done:
                configure(self)
                done.append(True)
    configure_once.__wrapped__ = configure  # type: ignore[attr-defined]

    def per_request(method, step: str):
        def memoised(self, request):
            return memo.get(step, request, lambda r: method(self, r))
        memoised.__wrapped__ = method  # type: ignore[attr-defined]
        return memoised

    def per_provider(method):
        # AnalyzeStack carries every resource's provider, nearly always the same few: one value per
        # distinct provider message (compared by its bytes) within the request
        def memoised(self, request):
            if memo.entries is None or not request.HasField("provider"):
                return method(self, request)
            return memo.shared("provider", request.provider.SerializeToString(deterministic=True),
                               lambda: method(self, request))
        memoised.__wrapped__ = method  # type: ignore[attr-defined]
        return memoised

    setattr(deserialize_properties, _MARK, True)
    sdk.deserialize_properties = deserialize_properties
    sdk.json_format = types.SimpleNamespace(MessageToDict=message_to_dict)
    sdk.unknown_checking_proxy = unknown_checking_proxy
    servicer.Analyze = one_memo_per_request(servicer.Analyze, lambda request: request.type)
    servicer.AnalyzeStack = one_memo_per_request(servicer.AnalyzeStack, lambda request: None)
    servicer.Remediate = remediate_only_when_asked
    servicer._configure_runtime_settings = configure_once  # pylint: disable=protected-access
    servicer._get_resource_options = per_request(servicer._get_resource_options, "options")  # pylint: disable=protected-access
    servicer._get_provider_resource = per_provider(servicer._get_provider_resource)  # pylint: disable=protected-access
    return True

"""WebToolsConfig and parse_domain_list: bounds (WEB-7), domain lists (WEB-11, WEB-18), the egress marker (WEB-14)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steerable_agent_runtime.errors import ConfigError
from steerable_sidecar.web_tools import WebToolsConfig, parse_domain_list
from steerable_sidecar.web_tools._config import PROXY_ENV_VARS, SEARCH_PROVIDERS, WEB_LIMIT_ENV

# (field, variable, default, floor, ceiling), from the spec's Bounds table.
BOUNDS = [
    ("fetch_timeout_ms", "STEERABLE_WEB_FETCH_TIMEOUT_MS", 30_000, 1, 600_000),
    ("fetch_max_bytes", "STEERABLE_WEB_FETCH_MAX_BYTES", 1_000_000, 1, 100_000_000),
    ("fetch_max_redirects", "STEERABLE_WEB_FETCH_MAX_REDIRECTS", 5, 0, 20),
    ("search_timeout_ms", "STEERABLE_WEB_SEARCH_TIMEOUT_MS", 30_000, 1, 600_000),
    ("search_max_results", "STEERABLE_WEB_SEARCH_MAX_RESULTS", 8, 1, 20),
    ("session_search_cap", "STEERABLE_WEB_SESSION_SEARCH_CAP", 200, 0, 1_000_000),
    ("session_fetch_cap", "STEERABLE_WEB_SESSION_FETCH_CAP", 0, 0, 1_000_000),
]
BOUND_IDS = [row[0] for row in BOUNDS]

MISSING_PROXY = (
    "STEERABLE_EGRESS_CONFINED='1' says outbound traffic is confined to the egress proxy, but no proxy "
    "variable is set (https_proxy, HTTPS_PROXY, http_proxy, HTTP_PROXY, all_proxy, ALL_PROXY); point "
    "HTTPS_PROXY at the proxy, or unset STEERABLE_EGRESS_CONFINED when no proxy runs"
)


class RecordingEnv(Mapping[str, str]):
    """An environment that records every variable looked up and refuses to be listed."""

    def __init__(self, data: dict[str, str]) -> None:
        self._data = data
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("from_env must look variables up by name, never list the environment")

    def __len__(self) -> int:
        return len(self._data)


# -- bounds (WEB-7) ----------------------------------------------------------------------------------


def test_bounds_table_matches_the_spec_web_7() -> None:
    assert {name: (s.variable, s.default, s.floor, s.ceiling) for name, s in WEB_LIMIT_ENV.items()} == {
        name: (var, default, floor, ceiling) for name, var, default, floor, ceiling in BOUNDS
    }


def test_every_variable_unset_gives_the_spec_defaults_web_7() -> None:
    config = WebToolsConfig.from_env({})
    assert config == WebToolsConfig()
    assert {name: getattr(config, name) for name in BOUND_IDS} == {
        name: default for name, _var, default, _floor, _ceiling in BOUNDS
    }
    assert config.allowed_domains == ()
    assert config.blocked_domains == ()
    assert config.search_provider == "tavily"
    assert config.search_api_key == ""
    assert config.search_base_url == "https://api.tavily.com"
    assert config.egress_confined is False
    assert config.egress_proxy is None


@pytest.mark.parametrize(("name", "var", "default", "floor", "ceiling"), BOUNDS, ids=BOUND_IDS)
def test_bound_accepts_floor_and_ceiling_web_7(
    name: str, var: str, default: int, floor: int, ceiling: int
) -> None:
    assert getattr(WebToolsConfig.from_env({var: str(ceiling)}), name) == ceiling
    assert getattr(WebToolsConfig.from_env({var: f" {floor} "}), name) == floor
    assert getattr(WebToolsConfig.from_env({var: ""}), name) == default
    assert getattr(WebToolsConfig.from_env({var: "   "}), name) == default


@pytest.mark.parametrize(("name", "var", "default", "floor", "ceiling"), BOUNDS, ids=BOUND_IDS)
def test_bound_accepts_underscore_separators_web_7(
    name: str, var: str, default: int, floor: int, ceiling: int
) -> None:
    assert getattr(WebToolsConfig.from_env({var: f"{ceiling:_}"}), name) == ceiling


@pytest.mark.parametrize(("name", "var", "default", "floor", "ceiling"), BOUNDS, ids=BOUND_IDS)
@pytest.mark.parametrize("where", ["above_ceiling", "below_floor", "fraction", "word", "hex"])
def test_bound_refuses_out_of_range_and_non_integers_web_7(
    name: str, var: str, default: int, floor: int, ceiling: int, where: str
) -> None:
    raw = {
        "above_ceiling": str(ceiling + 1),
        "below_floor": str(floor - 1),
        "fraction": "1.5",
        "word": "lots",
        "hex": "0x10",
    }[where]
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({var: raw})
    assert str(caught.value) == f"{var}={raw!r} must be an integer from {floor} to {ceiling}"


@pytest.mark.parametrize(("name", "var", "default", "floor", "ceiling"), BOUNDS, ids=BOUND_IDS)
@pytest.mark.parametrize("bad", ["floor", "ceiling", "bool", "str"])
def test_direct_construction_names_the_field_web_7(
    name: str, var: str, default: int, floor: int, ceiling: int, bad: str
) -> None:
    value = {"floor": floor - 1, "ceiling": ceiling + 1, "bool": True, "str": "5"}[bad]
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig(**{name: value})  # type: ignore[arg-type]
    assert (
        str(caught.value) == f"WebToolsConfig.{name}={value!r} must be an integer from {floor} to {ceiling}"
    )


def test_config_is_frozen() -> None:
    config = WebToolsConfig()
    with pytest.raises(AttributeError):
        config.fetch_max_bytes = 5  # type: ignore[misc]


# -- search provider, key and base URL ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "provider"),
    [
        ("tavily", "tavily"),
        ("host", "host"),
        ("ddg", "ddg"),
        (" DDG ", "ddg"),
        ("Host", "host"),
        ("", "tavily"),
    ],
)
def test_provider_names_are_trimmed_and_case_insensitive(raw: str, provider: str) -> None:
    assert WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_PROVIDER": raw}).search_provider == provider


@pytest.mark.parametrize("raw", ["bing", "duckduckgo", "openai", "tavily,ddg"])
def test_unknown_provider_names_the_variable_and_the_accepted_names(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_PROVIDER": raw})
    assert str(caught.value) == (
        f"STEERABLE_WEB_SEARCH_PROVIDER={raw!r} is not a web search provider; use one of: tavily, host, ddg"
    )
    assert SEARCH_PROVIDERS == ("tavily", "host", "ddg")


def test_direct_provider_must_be_exact() -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig(search_provider="DDG")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "WebToolsConfig.search_provider='DDG' is not a web search provider; use one of: tavily, host, ddg"
    )


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"STEERABLE_WEB_SEARCH_API_KEY": "tvly-own", "TAVILY_API_KEY": "tvly-other"}, "tvly-own"),
        ({"TAVILY_API_KEY": " tvly-other "}, "tvly-other"),
        ({"STEERABLE_WEB_SEARCH_API_KEY": "  ", "TAVILY_API_KEY": "tvly-other"}, "tvly-other"),
        ({"STEERABLE_WEB_SEARCH_API_KEY": "tvly-own"}, "tvly-own"),
        ({}, ""),
    ],
)
def test_search_key_precedence(env: dict[str, str], key: str) -> None:
    assert WebToolsConfig.from_env(env).search_api_key == key


def test_search_key_is_never_the_llm_key() -> None:
    env = RecordingEnv(
        {
            "STEERABLE_API_KEY": "sk-llm",
            "OPENAI_API_KEY": "sk-openai",
            "OPENROUTER_API_KEY": "sk-or",
            "DEEPSEEK_API_KEY": "sk-ds",
            "STEERABLE_WEB_SEARCH_PROVIDER": "host",
        }
    )
    config = WebToolsConfig.from_env(env)
    assert config.search_api_key == ""
    assert not any(
        "API_KEY" in name and name not in ("STEERABLE_WEB_SEARCH_API_KEY", "TAVILY_API_KEY")
        for name in env.read
    )
    assert not any(name.lower().endswith("_proxy") for name in env.read)  # not confined: no proxy lookup


def test_search_key_is_absent_from_repr_and_str() -> None:
    config = WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_API_KEY": "tvly-SECRET-123"})
    assert config.search_api_key == "tvly-SECRET-123"
    assert "tvly-SECRET-123" not in repr(config)
    assert "tvly-SECRET-123" not in str(config)
    assert "search_api_key" not in repr(config)


@pytest.mark.parametrize("var", ["STEERABLE_WEB_SEARCH_API_KEY", "TAVILY_API_KEY"])
def test_search_key_a_header_cannot_carry_is_refused_without_showing_it(var: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({var: "tvly-SECRET 123"})
    assert str(caught.value) == (
        f"{var} contains characters an HTTP header cannot carry (spaces, control or non-ASCII "
        "characters); check how the key was pasted"
    )
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://api.tavily.com", "https://api.tavily.com"),
        ("http://127.0.0.1:8765/", "http://127.0.0.1:8765"),
        ("  https://search.example/tavily/  ", "https://search.example/tavily"),
    ],
)
def test_search_base_url_is_normalized(raw: str, expected: str) -> None:
    assert WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_BASE_URL": raw}).search_base_url == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("ftp://search.example", " must be an http:// or https:// URL with a host (it has ftp://)"),
        ("search.example", " must be an http:// or https:// URL with a host"),
        (
            "https://user:hunter2@search.example",
            "='https://...@search.example' must not contain credentials; put the key in "
            "STEERABLE_WEB_SEARCH_API_KEY",
        ),
        (
            "https://search.example/hunter2/?key=hunter2",
            "='https://search.example/...?...' must not have a query or fragment "
            "(the provider appends its endpoint path)",
        ),
        ("http://[::1", " is not a URL"),
        ("https://xn--/v1", " is not a URL"),
        ("ftp://user:hunter2@host/v1", " must be an http:// or https:// URL with a host (it has ftp://)"),
    ],
)
def test_search_base_url_refusals_name_the_variable(raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({"STEERABLE_WEB_SEARCH_BASE_URL": raw})
    assert str(caught.value) == f"STEERABLE_WEB_SEARCH_BASE_URL{message}"
    assert "hunter2" not in str(caught.value)  # the value may hold a key: only scheme and host are shown
    with pytest.raises(ConfigError) as direct:
        WebToolsConfig(search_base_url=raw)
    assert str(direct.value) == f"WebToolsConfig.search_base_url{message}"


# -- domain lists (WEB-11) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "entries"),
    [
        ("", ()),
        ("   ", ()),  # only whitespace: as if unset
        (" , example.com,, ", ("example.com",)),  # empty entries beside a real one are dropped
        ("example.com", ("example.com",)),
        ("Example.COM, docs.python.org", ("example.com", "docs.python.org")),
        (".example.com.", ("example.com",)),
        ("*.example.com", ("example.com",)),  # a wildcard means what the bare entry already means
        ("*.example.com,example.com,EXAMPLE.com.", ("example.com",)),
        ("b.org,a.org,b.org", ("b.org", "a.org")),
        ("BÜCHER.example", ("xn--bcher-kva.example",)),
        ("bücher。example", ("xn--bcher-kva.example",)),  # ideographic full stop (UTS-46)
        ("ＥＸＡＭＰＬＥ.com", ("example.com",)),  # full-width letters (UTS-46)
        ("xn--bcher-kva.example", ("xn--bcher-kva.example",)),
        ("faß.de", ("xn--fa-hia.de",)),  # non-transitional: ß is kept, not mapped to ss
        ("localhost", ("localhost",)),
        ("1.2.3.4", ("1.2.3.4",)),
        ("[2001:DB8::1], 2001:db8:0::1", ("2001:db8::1",)),
    ],
)
def test_parse_domain_list_normalizes_web_11(raw: str, entries: tuple[str, ...]) -> None:
    assert parse_domain_list(raw, variable="STEERABLE_WEB_ALLOWED_DOMAINS") == entries


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("https://example.com", "it has a scheme"),
        ("example.com/docs", "it has a path"),
        ("user@example.com", "it has userinfo"),
        ("example.com:443", "it has a port"),
        ("exa mple.com", "it has a space"),
        ("*", "a bare * is not a domain; leave STEERABLE_WEB_BLOCKED_DOMAINS empty to mean every host"),
        ("*example.com", "* is only accepted as a leading *."),
        ("docs.*.example.com", "* is only accepted as a leading *."),
        ("a..example.com", "Empty Label"),
        ("..example.com", "it has an empty label"),
        ("example.com..", "it has an empty label"),
        ("..", "nothing is left after the dots"),
        (".", "nothing is left after the dots"),
        ("-bad.example.com", "Label must not start or end with a hyphen"),
        ("my_host.example.com", "Codepoint U+005F at position 3 of 'my_host' not allowed"),
        ("a" * 64 + ".com", "Label too long"),
        ("xn--zz.com", "Invalid A-label"),
        ("127.1", "its last label is a number but the entry is not an IPv4 address"),
        ("010.0.0.1", "its last label is a number but the entry is not an IPv4 address"),
        ("0x7f000001", "its last label is a number but the entry is not an IPv4 address"),
    ],
)
def test_parse_domain_list_refuses_non_host_names_naming_variable_and_entry_web_11(
    entry: str, why: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_domain_list(f"ok.example, {entry} ", variable="STEERABLE_WEB_BLOCKED_DOMAINS")
    assert str(caught.value) == (
        f"STEERABLE_WEB_BLOCKED_DOMAINS: {entry!r} is not a host name ({why}); write names like docs.example.com"
    )


ALL_EMPTY = [",", " , ", " , ,, ", "\t,\n"]


@pytest.mark.parametrize("raw", ALL_EMPTY)
@pytest.mark.parametrize(
    ("variable", "meaning"),
    [
        ("STEERABLE_WEB_ALLOWED_DOMAINS", "every public host is allowed"),
        ("STEERABLE_WEB_BLOCKED_DOMAINS", "nothing is blocked"),
    ],
)
def test_a_list_of_only_empty_entries_is_a_configuration_error_web_18(
    raw: str, variable: str, meaning: str
) -> None:
    expected = (
        f"{variable}={raw!r} lists no domain (every entry is empty); write names like "
        f"docs.example.com, or unset it (then {meaning})"
    )
    with pytest.raises(ConfigError) as caught:
        parse_domain_list(raw, variable=variable)
    assert str(caught.value) == expected
    with pytest.raises(ConfigError) as resolved:  # raised when the configuration is resolved
        WebToolsConfig.from_env({variable: raw})
    assert str(resolved.value) == expected


@pytest.mark.parametrize("variable", ["STEERABLE_WEB_ALLOWED_DOMAINS", "STEERABLE_WEB_BLOCKED_DOMAINS"])
def test_doctor_and_tools_refuse_a_list_of_only_empty_entries_web_18(
    tmp_path: Path, variable: str, run_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    message = f"{variable}=' , ' lists no domain (every entry is empty)"
    doctor = run_cli("doctor", "--json", "--no-plugins", stdin="", cwd=tmp_path, **{variable: " , "})
    assert doctor.returncode == 2, doctor.stdout + doctor.stderr
    rows = {(c["section"], c["item"]): c for c in json.loads(doctor.stdout)["checks"]}
    row = rows[("Web tools", "configuration")]
    assert row["status"] == "error" and row["detail"].startswith(message)
    tools = run_cli("tools", "--no-plugins", stdin="", cwd=tmp_path, **{variable: " , "})
    assert tools.returncode == 2 and message in tools.stderr, tools.stderr
    assert "Traceback" not in tools.stderr
    fine = run_cli("tools", "--json", "--no-plugins", stdin="", cwd=tmp_path, **{variable: "   "})
    assert fine.returncode == 0, fine.stderr


def test_domain_lists_come_from_the_environment_web_11() -> None:
    config = WebToolsConfig.from_env(
        {
            "STEERABLE_WEB_ALLOWED_DOMAINS": "Docs.Python.org, *.example.com",
            "STEERABLE_WEB_BLOCKED_DOMAINS": "ads.example.com",
        }
    )
    assert config.allowed_domains == ("docs.python.org", "example.com")
    assert config.blocked_domains == ("ads.example.com",)


def test_direct_domain_lists_are_normalized_and_checked_web_11() -> None:
    config = WebToolsConfig(
        allowed_domains=("Example.COM.", "example.com"), blocked_domains=("*.ads.example",)
    )
    assert config.allowed_domains == ("example.com",)
    assert config.blocked_domains == ("ads.example",)
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig(allowed_domains="example.com")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "WebToolsConfig.allowed_domains must be a sequence of domain names, not a string; use parse_domain_list"
    )
    with pytest.raises(ConfigError) as bad:
        WebToolsConfig(blocked_domains=("http://x",))
    assert str(bad.value) == (
        "WebToolsConfig.blocked_domains: 'http://x' is not a host name (it has a scheme); "
        "write names like docs.example.com"
    )


_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12).filter(
    lambda s: not s.isdigit()
)
_name = st.lists(_label, min_size=1, max_size=4).map(".".join)


@given(st.lists(_name, max_size=6))
def test_parse_domain_list_is_idempotent_web_11(names: list[str]) -> None:
    once = parse_domain_list(", ".join(names), variable="V")
    assert parse_domain_list(",".join(once), variable="V") == once
    assert len(set(once)) == len(once)
    assert all(entry == entry.lower() and not entry.endswith(".") for entry in once)


# -- egress proxy (WEB-14) ---------------------------------------------------------------------------


@pytest.mark.parametrize("proxy_var", PROXY_ENV_VARS)
def test_egress_marker_with_any_proxy_variable_web_14(proxy_var: str) -> None:
    config = WebToolsConfig.from_env({"STEERABLE_EGRESS_CONFINED": "1", proxy_var: "http://127.0.0.1:8080"})
    assert config.egress_confined is True
    assert config.egress_proxy == "http://127.0.0.1:8080"


def test_egress_marker_without_a_proxy_fails_loud_web_14() -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({"STEERABLE_EGRESS_CONFINED": "1", "HTTPS_PROXY": "  ", "NO_PROXY": "*"})
    assert str(caught.value) == MISSING_PROXY


def test_egress_marker_direct_construction_needs_a_proxy_web_14() -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig(egress_confined=True)
    assert str(caught.value) == MISSING_PROXY.replace(
        "STEERABLE_EGRESS_CONFINED='1'", "WebToolsConfig.egress_confined=True"
    )
    assert (
        WebToolsConfig(egress_confined=True, egress_proxy="127.0.0.1:3128").egress_proxy
        == "http://127.0.0.1:3128"
    )


@pytest.mark.parametrize("marker", ["0", "false", "", "off"])
def test_no_marker_needs_no_proxy_and_reports_none_web_14(marker: str) -> None:
    config = WebToolsConfig.from_env({"STEERABLE_EGRESS_CONFINED": marker, "HTTPS_PROXY": "http://proxy:1"})
    assert config.egress_confined is False
    assert config.egress_proxy is None


def test_egress_marker_must_be_a_boolean_web_14() -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({"STEERABLE_EGRESS_CONFINED": "maybe"})
    assert str(caught.value) == (
        "STEERABLE_EGRESS_CONFINED='maybe' is not a boolean; use 1/true/yes/on or 0/false/no/off"
    )


def test_egress_proxy_lowercase_wins_and_credentials_are_dropped_web_14() -> None:
    config = WebToolsConfig.from_env(
        {
            "STEERABLE_EGRESS_CONFINED": "true",
            "HTTPS_PROXY": "http://upper:3128",
            "https_proxy": "http://user:hunter2@lower:3128",
        }
    )
    assert config.egress_proxy == "http://lower:3128"
    assert "hunter2" not in repr(config)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            "ftp://user:hunter2@proxy:21",
            "HTTPS_PROXY must be a proxy URL with a host and one of the schemes http, https, socks5, "
            "socks5h, e.g. http://127.0.0.1:8080",
        ),
        ("http://user:hunter2@[::1", "HTTPS_PROXY is not a proxy URL; use e.g. http://127.0.0.1:8080"),
    ],
)
def test_unusable_egress_proxy_is_refused_without_its_credentials_web_14(raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        WebToolsConfig.from_env({"STEERABLE_EGRESS_CONFINED": "1", "HTTPS_PROXY": raw})
    assert str(caught.value) == message
    assert "hunter2" not in str(caught.value)


def test_from_env_reads_only_its_own_variables() -> None:
    env = RecordingEnv({"STEERABLE_EGRESS_CONFINED": "1", "ALL_PROXY": "socks5://127.0.0.1:1080"})
    config = WebToolsConfig.from_env(env)
    assert config.egress_proxy == "socks5://127.0.0.1:1080"
    expected = (
        {spec.variable for spec in WEB_LIMIT_ENV.values()}
        | {
            "STEERABLE_WEB_SEARCH_PROVIDER",
            "STEERABLE_WEB_SEARCH_API_KEY",
            "TAVILY_API_KEY",
            "STEERABLE_WEB_SEARCH_BASE_URL",
            "STEERABLE_WEB_ALLOWED_DOMAINS",
            "STEERABLE_WEB_BLOCKED_DOMAINS",
            "STEERABLE_WEB_FETCH_TRUSTED_DOMAINS",
            "STEERABLE_EGRESS_CONFINED",
        }
        | set(PROXY_ENV_VARS)
    )
    assert env.read == expected

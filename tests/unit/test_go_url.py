"""Go net/url.Parse and the reference webhook's keystoneEndpoint checks."""

from __future__ import annotations

import pytest

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_url import (
    MESSAGE_HOST,
    MESSAGE_SCHEME,
    GoURL,
    URLError,
    check_endpoint_url,
    parse_url,
    url_host,
    url_port,
)

VALID_ENDPOINTS = [
    "http://keystone.openstack.svc.cluster.local:5000/v3",
    "https://keystone.example.com/v3",
    "https://keystone.example.com",
    "HTTP://KEYSTONE:5000",
    "hTTps://keystone/v3/",
    "http://10.0.0.1:5000",
    "http://[::1]:5000/v3",
    "http://[2001:db8::1]/v3",
    "http://[::ffff:10.0.0.1]:5000/",
    "http://[fe80::1%25eth0]:5000/",
    "http://user:p%40ss@keystone/v3",
    "http://keystone/v3?region=%zz",  # Go never validates the query
    "https://keystone/v3#frag",
    "http://keystone:/v3",
    "http://keystone:99999/v3",
    "http://:80",  # Go's Host is ":80", which is not empty
    "http://caf\u00e9.example/",
    "http://caf%C3%A9.example/",
    "http://keystone/v3/%2F",
    "http://a!$&'()*+,;=b/",
]


@pytest.mark.parametrize("value", VALID_ENDPOINTS)
def test_valid_endpoints_pass(value: str) -> None:
    assert check_endpoint_url(value) is None


INVALID_ENDPOINTS = [
    ("http://", MESSAGE_HOST),
    ("https://", MESSAGE_HOST),
    ("http:///v3", MESSAGE_HOST),
    ("http:/v3", MESSAGE_HOST),
    ("http:keystone", MESSAGE_HOST),
    ("http://user@/v3", MESSAGE_HOST),
    ("ftp://keystone", MESSAGE_SCHEME),
    ("keystone:5000/v3", MESSAGE_SCHEME),
    ("localhost:5000", MESSAGE_SCHEME),
    ("//keystone/v3", MESSAGE_SCHEME),
    ("keystone/v3", MESSAGE_SCHEME),
    ("/v3", MESSAGE_SCHEME),
    ("", MESSAGE_SCHEME),
    ("*", MESSAGE_SCHEME),
    ("http+unix://socket", MESSAGE_SCHEME),
    (
        "http://a b/v3",
        'must be a valid URL: parse "http://a b/v3": invalid character " " in host name',
    ),
    (
        "http://keystone:x/v3",
        'must be a valid URL: parse "http://keystone:x/v3": invalid port ":x" after host',
    ),
    (
        "http://keystone:5000x/v3",
        'must be a valid URL: parse "http://keystone:5000x/v3": invalid port ":5000x" after host',
    ),
    (
        "http://keystone\n/v3",
        'must be a valid URL: parse "http://keystone\\n/v3": '
        "net/url: invalid control character in URL",
    ),
    (
        "http://keystone/v3\x7f",
        'must be a valid URL: parse "http://keystone/v3\\x7f": '
        "net/url: invalid control character in URL",
    ),
    (
        " http://keystone",
        'must be a valid URL: parse " http://keystone": first path segment in URL cannot contain colon',
    ),
    (
        "10.0.0.1:5000/v3",
        'must be a valid URL: parse "10.0.0.1:5000/v3": '
        "first path segment in URL cannot contain colon",
    ),
    (":5000", 'must be a valid URL: parse ":5000": missing protocol scheme'),
    ("://keystone", 'must be a valid URL: parse "://keystone": missing protocol scheme'),
    ("http://%zz/", 'must be a valid URL: parse "http://%zz/": invalid URL escape "%zz"'),
    ("http://k/%zz", 'must be a valid URL: parse "http://k/%zz": invalid URL escape "%zz"'),
    ("http://k/%4", 'must be a valid URL: parse "http://k/%4": invalid URL escape "%4"'),
    ("http://k/#%zz", 'must be a valid URL: parse "http://k/#%zz": invalid URL escape "%zz"'),
    ("http://k%41/", 'must be a valid URL: parse "http://k%41/": invalid URL escape "%41"'),
    (
        "http://k{x}/",
        'must be a valid URL: parse "http://k{x}/": invalid character "{" in host name',
    ),
    ("http://us er@k/", 'must be a valid URL: parse "http://us er@k/": net/url: invalid userinfo'),
    ("http://[::1/v3", "must be a valid URL: parse \"http://[::1/v3\": missing ']' in host"),
    (
        "http://[::1]x/",
        'must be a valid URL: parse "http://[::1]x/": invalid port "x" after host',
    ),
    # Since Go 1.25.2 (CVE-2025-47912) brackets must hold an IPv6 address and start the host.
    ("http://[10.0.0.1]/", 'must be a valid URL: parse "http://[10.0.0.1]/": invalid IP-literal'),
    ("http://a[::1]/", 'must be a valid URL: parse "http://a[::1]/": invalid IP-literal'),
    (
        "http://[keystone]/",
        'must be a valid URL: parse "http://[keystone]/": '
        'invalid host: ParseAddr("keystone"): unable to parse IP',
    ),
    (
        "http://[::g]/",
        'must be a valid URL: parse "http://[::g]/": invalid host: ParseAddr("::g"): '
        'each colon-separated field must have at least one digit (at "g")',
    ),
    # Since Go 1.26 an http(s) host may hold one colon only (urlstrictcolons=1).
    ("http://::1/", 'must be a valid URL: parse "http://::1/": invalid port "::1" after host'),
    (
        "http://keystone:1:2/",
        'must be a valid URL: parse "http://keystone:1:2/": invalid port ":1:2" after host',
    ),
    (
        "http://k\u00e9 y/",
        'must be a valid URL: parse "http://k\u00e9 y/": invalid character " " in host name',
    ),
]


@pytest.mark.parametrize(
    ("value", "message"), INVALID_ENDPOINTS, ids=[repr(c[0]) for c in INVALID_ENDPOINTS]
)
def test_invalid_endpoints_get_the_reference_message(value: str, message: str) -> None:
    assert check_endpoint_url(value) == message


LAX_COLON_CASES = [
    ("http://::1/", None, "::1"),
    ("http://keystone:1:2/", None, "keystone:1:2"),
    ("ftp://keystone:1:2/", MESSAGE_SCHEME, "keystone:1:2"),
]


@pytest.mark.parametrize(("value", "message", "host"), LAX_COLON_CASES)
def test_lax_colons_reproduce_go_before_1_26(value: str, message: str | None, host: str) -> None:
    assert check_endpoint_url(value, strict_colons=False) == message
    assert parse_url(value, strict_colons=False).host == host


def test_other_schemes_keep_lax_colons_as_in_current_go() -> None:
    assert parse_url("mongodb://h:1:2/").host == "h:1:2"


PORT_CASES = [
    ("http://keystone/v3", 80),
    ("https://keystone/v3", 443),
    ("HTTPS://keystone", 443),
    ("http://keystone:5000/v3", 5000),
    ("http://keystone:080", 80),
    ("http://keystone:/v3", 80),
    ("https://[::1]:8443/", 8443),
    ("https://[::1]/", 443),
    ("http://user:pw@keystone:35357", 35357),
    ("ftp://keystone/", None),
    ("ftp://keystone:21/", 21),
    ("/v3", None),
]


@pytest.mark.parametrize(("value", "port"), PORT_CASES)
def test_url_port_is_explicit_or_the_scheme_default(value: str, port: int | None) -> None:
    assert url_port(value) == port


HOST_CASES = [
    ("http://keystone.example.com:5000/v3", "keystone.example.com"),
    ("http://Keystone/v3", "Keystone"),
    ("http://[::1]:5000/v3", "::1"),
    ("http://[2001:db8::1]/", "2001:db8::1"),
    ("http://[fe80::1%25en0]:80/", "fe80::1%en0"),
    ("http://user:pw@keystone:1/", "keystone"),
    ("http://caf%C3%A9.example/", "caf\u00e9.example"),
    ("http://", ""),
    ("http://:80", ""),
    ("http:opaque", ""),
]


@pytest.mark.parametrize(("value", "host"), HOST_CASES)
def test_url_host_is_go_hostname(value: str, host: str) -> None:
    assert url_host(value) == host


@pytest.mark.parametrize("helper", [url_port, url_host])
def test_helpers_raise_on_unparseable_urls(helper: object) -> None:
    with pytest.raises(URLError) as caught:
        helper("http://a b")  # type: ignore[operator]
    assert isinstance(caught.value, ValueError)
    assert caught.value.reason == 'invalid character " " in host name'
    assert caught.value.url == "http://a b"


PARSE_CASES = [
    (
        "HTTPS://user:p%40ss@Keystone:5000/v3/a%20b?x=1#top",
        GoURL(
            scheme="https",
            username="user",
            password="p@ss",
            host="Keystone:5000",
            path="/v3/a b",
            raw_query="x=1",
            fragment="top",
        ),
    ),
    ("http://keystone", GoURL(scheme="http", host="keystone")),
    ("http://keystone?", GoURL(scheme="http", host="keystone", force_query=True)),
    ("http:/v3", GoURL(scheme="http", path="/v3", omit_host=True)),
    ("mailto:a@b", GoURL(scheme="mailto", opaque="a@b")),
    ("keystone:5000/v3", GoURL(scheme="keystone", opaque="5000/v3")),
    ("//keystone/v3", GoURL(host="keystone", path="/v3")),
    ("///v3", GoURL(path="///v3")),
    ("v3/tokens", GoURL(path="v3/tokens")),
    ("*", GoURL(path="*")),
    ("", GoURL()),
    ("http://k/#a\nb", GoURL(scheme="http", host="k", path="/", fragment="a\nb")),
    ("http://u@k", GoURL(scheme="http", username="u", host="k")),
    ("http://[fe80::1%25en0]/", GoURL(scheme="http", host="[fe80::1%en0]", path="/")),
]


@pytest.mark.parametrize(("value", "expected"), PARSE_CASES, ids=[repr(c[0]) for c in PARSE_CASES])
def test_parse_url_fills_the_go_fields(value: str, expected: GoURL) -> None:
    assert parse_url(value) == expected


def test_parse_url_needs_a_string() -> None:
    with pytest.raises(TypeError):
        parse_url(None)  # type: ignore[arg-type]

"""Go ``net/url.Parse`` in Python, and the reference webhook's endpoint checks.

Why a port and not a library: ``urllib.parse`` accepts what ``url.Parse`` refuses and
refuses with no error text at all; the webhook must refuse exactly what the reference
refuses, with Go's words.

The reference webhook validates ``keystoneEndpoint`` and
``keystonePublicEndpoint`` with ``url.Parse`` followed by two rules: the scheme
must be http or https and the host must not be empty. :func:`check_endpoint_url`
returns the same messages (``must be a valid URL: <Go's error>``, ``scheme must
be http or https``, ``URL must include a host``).

:func:`parse_url` ports ``url.Parse`` of current Go (1.26 and later) with its
error texts, which quote the input the way Go's ``%q`` does, for example
``parse "http://a b": invalid character " " in host name``. Details kept:

* any ASCII control character before the ``#`` fails the whole URL;
* the scheme is lower-cased; ``scheme:rest`` without ``/`` is opaque (so
  ``localhost:5000`` parses, with scheme ``localhost``), while ``1.2.3.4:5``
  fails with ``first path segment in URL cannot contain colon``;
* ``http://`` parses with an empty host; ``http://:80`` has host ``:80``;
* a bracketed host must be an IPv6 address (``netip.ParseAddr``, zones with
  ``%25``), a ``[`` anywhere else is ``invalid IP-literal``;
* the port must be digits only (``invalid port ":x" after host``); since Go 1.26
  an http or https host may hold only one colon outside brackets
  (``http://::1/`` and ``http://h:1:2`` are refused; ``strict_colons=False``
  gives the older behaviour, where the last colon starts the port);
* ``%`` escapes must be well formed everywhere except the query, and in a host
  may only encode non-ASCII bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ansible_collections.c5c3.glance.plugins.module_utils.gosemantics.go_duration import go_quote

MESSAGE_INVALID_URL = "must be a valid URL: "
MESSAGE_SCHEME = "scheme must be http or https"
MESSAGE_HOST = "URL must include a host"
DEFAULT_PORTS = {"http": 80, "https": 443}

_PATH, _HOST, _ZONE, _USER_PASSWORD, _QUERY, _FRAGMENT = range(1, 7)
_HEX = b"0123456789abcdefABCDEF"
_ALNUM = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_USERINFO_EXTRA = b"-._:~!$&'()*+,;=%@"


class URLError(ValueError):
    """Go's ``*url.Error``: ``parse "<url>": <reason>``."""

    def __init__(self, url: bytes, reason: str) -> None:
        self.url = url.decode("utf-8", "surrogateescape")
        self.reason = reason
        super().__init__(f"parse {go_quote(url)}: {reason}")


class _Failure(Exception):
    """A reason for ``parse`` to fail, wrapped into a :class:`URLError` by the caller."""


@dataclass(frozen=True)
class GoURL:
    """The fields of Go's ``url.URL`` (``host`` keeps its port, as in Go)."""

    scheme: str = ""
    opaque: str = ""
    username: str | None = None
    password: str | None = None
    host: str = ""
    path: str = ""
    omit_host: bool = False
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""

    @property
    def hostname(self) -> str:
        """``URL.Hostname()``: the host without a valid port, brackets stripped."""
        return _split_host_port(self.host)[0]

    @property
    def port(self) -> str:
        """``URL.Port()``: the digits after the host's last colon, or ``""``."""
        return _split_host_port(self.host)[1]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _should_escape(char: int, mode: int) -> bool:
    """Go's ``shouldEscape``."""
    if char in _ALNUM:
        return False
    if mode in (_HOST, _ZONE) and char in b"!$&'()*+,;=:[]<>\"":
        return False
    if char in b"-_.~":
        return False
    if char in b"$&+,/:;=?@":
        if mode == _PATH:
            return char == ord("?")
        if mode == _USER_PASSWORD:
            return char in b"@/?:"
        if mode == _QUERY:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and char in b"!()*")


def _unhex(char: int) -> int:
    return int(chr(char), 16)


def _unescape(data: bytes, mode: int) -> bytes:
    """Go's ``unescape``; raises with ``EscapeError`` or ``InvalidHostError`` text."""
    index = 0
    escapes = 0
    has_plus = False
    while index < len(data):
        char = data[index]
        if char == 0x25:  # %
            escapes += 1
            if index + 2 >= len(data) or data[index + 1] not in _HEX or data[index + 2] not in _HEX:
                raise _Failure("invalid URL escape " + go_quote(data[index : index + 3]))
            triple = data[index : index + 3]
            if mode == _HOST and _unhex(data[index + 1]) < 8 and triple != b"%25":
                raise _Failure("invalid URL escape " + go_quote(triple))
            if mode == _ZONE:
                value = _unhex(data[index + 1]) << 4 | _unhex(data[index + 2])
                if triple != b"%25" and value != 0x20 and _should_escape(value, _HOST):
                    raise _Failure("invalid URL escape " + go_quote(triple))
            index += 3
        elif char == 0x2B:  # +
            has_plus = mode == _QUERY
            index += 1
        else:
            if mode in (_HOST, _ZONE) and char < 0x80 and _should_escape(char, mode):
                raise _Failure(
                    f"invalid character {go_quote(data[index : index + 1])} in host name"
                )
            index += 1
    if escapes == 0 and not has_plus:
        return data
    out = bytearray()
    index = 0
    while index < len(data):
        char = data[index]
        if char == 0x25:
            out.append(_unhex(data[index + 1]) << 4 | _unhex(data[index + 2]))
            index += 3
            continue
        out.append(0x20 if char == 0x2B and mode == _QUERY else char)
        index += 1
    return bytes(out)


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    """Go's ``getScheme``."""
    for index, char in enumerate(raw):
        if 0x61 <= char <= 0x7A or 0x41 <= char <= 0x5A:
            continue
        if 0x30 <= char <= 0x39 or char in b"+-.":
            if index == 0:
                return b"", raw
            continue
        if char == 0x3A:  # :
            if index == 0:
                raise _Failure("missing protocol scheme")
            return raw[:index], raw[index + 1 :]
        return b"", raw
    return b"", raw


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[:1] == b":" and all(0x30 <= char <= 0x39 for char in port[1:])


class _AddrError(Exception):
    pass


def _addr_error(whole: bytes, message: str, at: bytes = b"") -> _AddrError:
    text = f"ParseAddr({go_quote(whole)}): {message}"
    if at:
        text += f" (at {go_quote(at)})"
    return _AddrError(text)


def _parse_ipv4(text: bytes) -> None:
    value = position = digits = 0
    for index, char in enumerate(text):
        if 0x30 <= char <= 0x39:
            if digits == 1 and value == 0:
                raise _addr_error(text, "IPv4 field has octet with leading zero")
            value = value * 10 + char - 0x30
            digits += 1
            if value > 255:
                raise _addr_error(text, "IPv4 field has value >255")
        elif char == 0x2E:
            if index == 0 or index == len(text) - 1 or text[index - 1] == 0x2E:
                raise _addr_error(text, "IPv4 field must have at least one digit", text[index:])
            if position == 3:
                raise _addr_error(text, "IPv4 address too long")
            position += 1
            value = digits = 0
        else:
            raise _addr_error(text, "unexpected character", text[index:])
    if position < 3:
        raise _addr_error(text, "IPv4 address too short")


def _parse_ipv6(whole: bytes) -> None:
    rest = whole
    percent = rest.find(b"%")
    if percent != -1:
        rest = rest[:percent]
        if percent == len(whole) - 1:
            raise _addr_error(whole, "zone must be a non-empty string")
    ellipsis = -1
    if rest[:2] == b"::":
        ellipsis = 0
        rest = rest[2:]
        if not rest:
            return
    filled = 0
    while filled < 16:
        offset = 0
        accumulated = 0
        while offset < len(rest) and rest[offset] in _HEX:
            accumulated = (accumulated << 4) + _unhex(rest[offset])
            offset += 1
            if accumulated > 0xFFFF:
                raise _addr_error(whole, "IPv6 field has value >=2^16", rest)
        if offset == 0:
            raise _addr_error(
                whole, "each colon-separated field must have at least one digit", rest
            )
        if offset < len(rest) and rest[offset] == 0x2E:
            if ellipsis < 0 and filled != 12:
                raise _addr_error(
                    whole,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    rest,
                )
            if filled + 4 > 16:
                raise _addr_error(
                    whole,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    rest,
                )
            try:
                _parse_ipv4(rest)
            except _AddrError as error:
                raise _addr_error(whole, str(error), rest) from None
            rest = b""
            filled += 4
            break
        filled += 2
        rest = rest[offset:]
        if not rest:
            break
        if rest[0] != 0x3A:
            raise _addr_error(whole, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _addr_error(whole, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == 0x3A:
            if ellipsis >= 0:
                raise _addr_error(whole, "multiple :: in address", rest)
            ellipsis = filled
            rest = rest[1:]
            if not rest:
                break
    if rest:
        raise _addr_error(whole, "trailing garbage after address", rest)
    if filled < 16 and ellipsis < 0:
        raise _addr_error(whole, "address string too short")
    if filled == 16 and ellipsis >= 0:
        raise _addr_error(whole, "the :: must expand to at least one field of zeros")


def _parse_addr_is4(text: bytes) -> bool:
    """Go's ``netip.ParseAddr``: whether ``text`` is IPv4; raises on a bad address."""
    for char in text:
        if char == 0x2E:
            _parse_ipv4(text)
            return True
        if char == 0x3A:
            _parse_ipv6(text)
            return False
        if char == 0x25:
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


def _parse_host(scheme: bytes, host: bytes, strict_colons: bool) -> bytes:
    """Go's ``parseHost`` (Go 1.27: strict colons for http and https only)."""
    open_bracket = host.rfind(b"[")
    if open_bracket > 0:
        raise _Failure("invalid IP-literal")
    if open_bracket == 0:
        close_bracket = host.rfind(b"]")
        if close_bracket < 0:
            raise _Failure("missing ']' in host")
        colon_port = host[close_bracket + 1 :]
        if not _valid_optional_port(colon_port):
            raise _Failure(f"invalid port {go_quote(colon_port)} after host")
        colon_port = _unescape(colon_port, _HOST)
        hostname = host[1:close_bracket]
        zone = hostname.find(b"%25")
        if zone >= 0:
            unescaped = _unescape(hostname[:zone], _HOST) + _unescape(hostname[zone:], _ZONE)
        else:
            unescaped = _unescape(hostname, _HOST)
        try:
            is4 = _parse_addr_is4(unescaped)
        except _AddrError as error:
            raise _Failure(f"invalid host: {error}") from None
        if is4:
            raise _Failure("invalid IP-literal")
        return b"[" + unescaped + b"]" + colon_port
    colon = host.find(b":")
    if colon != -1:
        last = host.rfind(b":")
        if last != colon and (not strict_colons or scheme not in (b"http", b"https")):
            colon = last
        colon_port = host[colon:]
        if not _valid_optional_port(colon_port):
            raise _Failure(f"invalid port {go_quote(colon_port)} after host")
    return _unescape(host, _HOST)


def _valid_userinfo(userinfo: bytes) -> bool:
    return all(char in _ALNUM or char in _USERINFO_EXTRA for char in userinfo)


def _parse_authority(
    scheme: bytes, authority: bytes, strict_colons: bool
) -> tuple[bytes | None, bytes | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(scheme, authority[at + 1 :], strict_colons)
    if at < 0:
        return None, None, host
    userinfo = authority[:at]
    if not _valid_userinfo(userinfo):
        raise _Failure("net/url: invalid userinfo")
    if b":" not in userinfo:
        return _unescape(userinfo, _USER_PASSWORD), None, host
    username, _, password = userinfo.partition(b":")
    return _unescape(username, _USER_PASSWORD), _unescape(password, _USER_PASSWORD), host


def _parse(raw: bytes, strict_colons: bool) -> GoURL:
    """Go's unexported ``parse(rawURL, viaRequest=false)``."""
    if any(char < 0x20 or char == 0x7F for char in raw):
        raise _Failure("net/url: invalid control character in URL")
    if raw == b"*":
        return GoURL(path="*")
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    force_query = False
    raw_query = b""
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        force_query = True
        rest = rest[:-1]
    else:
        rest, _, raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if scheme:
            return GoURL(
                scheme=_text(scheme),
                opaque=_text(rest),
                force_query=force_query,
                raw_query=_text(raw_query),
            )
        if b":" in rest.partition(b"/")[0]:
            raise _Failure("first path segment in URL cannot contain colon")
    username = password = None
    host = b""
    omit_host = False
    if (scheme or not rest.startswith(b"///")) and rest.startswith(b"//"):
        authority, slash, path = rest[2:].partition(b"/")
        rest = slash + path
        username, password, host = _parse_authority(scheme, authority, strict_colons)
    elif scheme and rest.startswith(b"/"):
        omit_host = True
    path_bytes = _unescape(rest, _PATH)
    return GoURL(
        scheme=_text(scheme),
        username=None if username is None else _text(username),
        password=None if password is None else _text(password),
        host=_text(host),
        path=_text(path_bytes),
        omit_host=omit_host,
        force_query=force_query,
        raw_query=_text(raw_query),
    )


def parse_url(value: str, *, strict_colons: bool = True) -> GoURL:
    """Go's ``url.Parse``; raises :class:`URLError` (a ``ValueError``) with Go's text."""
    if not isinstance(value, str):
        raise TypeError(f"a URL must be a string, not {type(value).__name__}")
    raw = value.encode("utf-8", "surrogatepass")
    before, _, fragment = raw.partition(b"#")
    try:
        url = _parse(before, strict_colons)
    except _Failure as failure:
        raise URLError(before, str(failure)) from None
    if not fragment:
        return url
    try:
        decoded = _unescape(fragment, _FRAGMENT)
    except _Failure as failure:
        raise URLError(raw, str(failure)) from None
    return replace(url, fragment=_text(decoded))


def _split_host_port(host: str) -> tuple[str, str]:
    """Go's ``splitHostPort`` behind ``Hostname`` and ``Port``."""
    port = ""
    colon = host.rfind(":")
    if colon != -1 and _valid_optional_port(host[colon:].encode("utf-8", "surrogatepass")):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def check_endpoint_url(value: str, *, strict_colons: bool = True) -> str | None:
    """The reference webhook's check of a Keystone endpoint: ``None`` or its message."""
    try:
        url = parse_url(value, strict_colons=strict_colons)
    except URLError as error:
        return MESSAGE_INVALID_URL + str(error)
    if url.scheme not in ("http", "https"):
        return MESSAGE_SCHEME
    if not url.host:
        return MESSAGE_HOST
    return None


def url_port(value: str, *, strict_colons: bool = True) -> int | None:
    """The explicit port of a URL, else its scheme's default (http 80, https 443), else None.

    Raises :class:`URLError` when the URL does not parse.
    """
    url = parse_url(value, strict_colons=strict_colons)
    if url.port:
        return int(url.port)
    return DEFAULT_PORTS.get(url.scheme)


def url_host(value: str, *, strict_colons: bool = True) -> str:
    """``URL.Hostname()``: the host without its port, IPv6 brackets removed.

    Raises :class:`URLError` when the URL does not parse.
    """
    return parse_url(value, strict_colons=strict_colons).hostname

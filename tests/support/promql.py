"""The metric names a PromQL expression reads, for checking dashboards and alert rules.

``metric_names(expr)`` tokenizes the expression the way PromQL's lexer does and returns
every metric name it selects: a bare identifier that is not a keyword, not a function or
aggregation (an identifier followed by ``(``), not a label name (inside ``{...}``, or in the
list after ``by``, ``without``, ``on``, ``ignoring``, ``group_left``, ``group_right``), and a
``{__name__="..."}`` or ``{"name"}`` matcher. Strings, numbers, durations (``5m``, ``1h30m``
after ``offset``, in ``[...]``), ``@`` timestamps, comments and Grafana variables
(``$namespace``, ``${var}``, ``$__rate_interval``, ``[[var]]``) are skipped.

It is also a light parser: it raises :class:`PromQLError`, saying where, for what PromQL
refuses and it can see — unbalanced brackets, an unterminated string, a character PromQL has
no use for, a function PromQL does not have, two operands with no operator between them, a
label matcher without an operator or a quoted value, a range that is not a duration, an
empty expression. It does not type-check (a range vector where an instant one is wanted
passes): ``promtool check rules`` does that where it is installed.
"""

from __future__ import annotations

import re

AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)
FUNCTIONS = frozenset(
    {
        "abs",
        "absent",
        "absent_over_time",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "avg_over_time",
        "ceil",
        "changes",
        "clamp",
        "clamp_max",
        "clamp_min",
        "cos",
        "cosh",
        "count_over_time",
        "day_of_month",
        "day_of_week",
        "day_of_year",
        "days_in_month",
        "deg",
        "delta",
        "deriv",
        "double_exponential_smoothing",
        "end",
        "exp",
        "floor",
        "histogram_avg",
        "histogram_count",
        "histogram_fraction",
        "histogram_quantile",
        "histogram_stddev",
        "histogram_stdvar",
        "histogram_sum",
        "holt_winters",
        "hour",
        "idelta",
        "increase",
        "info",
        "irate",
        "label_join",
        "label_replace",
        "last_over_time",
        "ln",
        "log10",
        "log2",
        "mad_over_time",
        "max_over_time",
        "min_over_time",
        "minute",
        "month",
        "pi",
        "predict_linear",
        "present_over_time",
        "quantile_over_time",
        "rad",
        "rate",
        "resets",
        "round",
        "scalar",
        "sgn",
        "sin",
        "sinh",
        "sort",
        "sort_by_label",
        "sort_by_label_desc",
        "sort_desc",
        "sqrt",
        "start",
        "stddev_over_time",
        "stdvar_over_time",
        "sum_over_time",
        "tan",
        "tanh",
        "time",
        "timestamp",
        "vector",
        "year",
    }
)
BINARY_KEYWORDS = frozenset({"and", "or", "unless", "atan2"})
LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
OPTIONAL_LABEL_LIST = frozenset({"group_left", "group_right"})
KEYWORDS = BINARY_KEYWORDS | LABEL_LIST_KEYWORDS | {"offset", "bool"}
NUMBER_WORDS = frozenset({"inf", "nan"})
VALUE_ENDS = frozenset({"operand", "selector", "closed"})
"""States after which a value has ended (an operator, not an operand, may follow)."""

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_DURATION = r"(?:\d+(?:ms|s|m|h|d|w|y))+"
_VARIABLE = r"(?:\$\{[^}]+\}|\$[a-zA-Z_][a-zA-Z0-9_]*|\[\[[a-zA-Z_][a-zA-Z0-9_:]*\]\])"
_NUMBER = re.compile(
    rf"(?:0[xX][0-9a-fA-F]+|{_DURATION}|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![a-zA-Z0-9_:])"
)
_VARIABLE_TOKEN = re.compile(_VARIABLE)
_RANGE = re.compile(rf"\s*(?:{_DURATION}|{_VARIABLE})\s*(?::\s*(?:{_DURATION}|{_VARIABLE})?\s*)?")
_MATCHER_OP = re.compile(r"\s*(=~|!~|!=|=)\s*")
_OPERATORS = ("==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "^", "<", ">", ",", "@")


class PromQLError(ValueError):
    """An expression PromQL would refuse; the message says where."""


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opening at ``start``."""
    quote = text[start]
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and quote != "`":
            index += 2
            continue
        if char == quote:
            return index + 1
        if char == "\n" and quote != "`":
            break
        index += 1
    raise PromQLError(f"unterminated string at {start}: {text[start : start + 20]!r}")


def _skip_space(text: str, index: int) -> int:
    while index < len(text):
        if text[index].isspace():
            index += 1
        elif text[index] == "#":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
        else:
            break
    return index


def _matchers(text: str, start: int, names: set[str]) -> int:
    """Read ``{...}`` opening at ``start``; add the names it selects; the index after it."""
    index = start + 1
    while True:
        index = _skip_space(text, index)
        if index >= len(text):
            raise PromQLError(f"unclosed '{{' at {start}")
        if text[index] == "}":
            return index + 1
        if text[index] in "\"'`":
            end = _string_end(text, index)
            label = text[index + 1 : end - 1]
            after = _skip_space(text, end)
            if after < len(text) and text[after] in ",}":  # {"metric.name"}: a name alone
                names.add(label)
                index = after
                if text[index] == ",":
                    index += 1
                continue
        else:
            match = _LABEL.match(text, index)
            if not match:
                raise PromQLError(f"expected a label name at {index}: {text[index:][:20]!r}")
            label, end = match.group(), match.end()
        operator = _MATCHER_OP.match(text, end)
        if not operator:
            raise PromQLError(f"label {label!r} at {index} has no matcher operator")
        value_at = operator.end()
        if value_at >= len(text) or text[value_at] not in "\"'`":
            raise PromQLError(f"label {label!r} at {index} needs a quoted value")
        value_end = _string_end(text, value_at)
        if label == "__name__" and operator.group(1) == "=":
            names.add(text[value_at + 1 : value_end - 1])
        index = _skip_space(text, value_end)
        if index < len(text) and text[index] == ",":
            index += 1
        elif index >= len(text) or text[index] != "}":
            raise PromQLError(f"expected ',' or '}}' at {index} in the matchers at {start}")


def _label_list(text: str, start: int, keyword: str) -> int:
    """Read the ``(label, ...)`` after a grouping keyword; the index after it."""
    index = start + 1
    expect_label = True
    while True:
        index = _skip_space(text, index)
        if index >= len(text):
            raise PromQLError(f"unclosed label list of {keyword!r} at {start}")
        if text[index] == ")":
            return index + 1
        if not expect_label:
            if text[index] != ",":
                raise PromQLError(f"expected ',' or ')' at {index} in the labels of {keyword!r}")
            index += 1
            expect_label = True
            continue
        match = _LABEL.match(text, index) or (
            re.compile(r"\"[^\"]*\"").match(text, index)  # quoted (UTF-8) label names
        )
        if not match:
            raise PromQLError(f"expected a label name at {index} in the labels of {keyword!r}")
        index = match.end()
        expect_label = False


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (see the module docstring); PromQLError if it
    cannot be PromQL."""
    return _Reader(expr).read()


class _Reader:
    """One pass over an expression. ``state`` says what came last: ``start``,
    ``operator`` (an operand may come), ``open`` (a ``(``: an operand or, in a call, ``)``),
    ``operand`` (a value ended), ``closed`` (a ``)``: ``by``, ``without`` or a subquery's
    ``[...]`` may follow), ``selector`` (a metric name or matchers: ``{...}``, ``[...]``
    may follow), ``offset``, ``call`` (a function or aggregation whose ``(``, or
    for an aggregation ``by``/``without``, comes next)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.names: set[str] = set()
        self.parens: list[int] = []
        self.state = "start"

    def operand(self, at: int, state: str = "operand") -> None:
        if self.state in VALUE_ENDS:
            raise PromQLError(f"two operands with no operator between them at {at}")
        if self.state == "call":
            raise PromQLError(f"a function or aggregation before {at} has no '('")
        self.state = state

    def read(self) -> set[str]:
        text = self.text
        index = _skip_space(text, 0)
        if index >= len(text):
            raise PromQLError("empty expression")
        while index < len(text):
            index = _skip_space(text, self.step(index))
        if self.parens:
            raise PromQLError(f"unclosed '(' at {self.parens[-1]}")
        if self.state not in VALUE_ENDS:
            raise PromQLError("the expression ends in an operator, a keyword or a call")
        return self.names

    def step(self, index: int) -> int:
        """Read the token at ``index``; the index after it."""
        text, char = self.text, self.text[index]
        variable = _VARIABLE_TOKEN.match(text, index)
        if variable:
            self.operand(index)
            return variable.end()
        if char in "\"'`":
            self.operand(index)
            return _string_end(text, index)
        if char == "(":
            if self.state in VALUE_ENDS:
                raise PromQLError(f"'(' after an operand at {index}")
            self.parens.append(index)
            self.state = "open"
            return index + 1
        if char == ")":
            if not self.parens:
                raise PromQLError(f"unbalanced ')' at {index}")
            self.parens.pop()
            if self.state in ("operator", "offset", "call"):
                raise PromQLError(f"')' at {index} follows an operator or keyword")
            self.state = "closed"
            return index + 1
        if char == "{":
            if self.state != "selector":  # no name before it: {__name__="x"}
                self.operand(index)
            self.state = "selector"
            return _matchers(text, index, self.names)
        if char == "[":
            if self.state not in ("selector", "closed"):
                raise PromQLError(f"a range at {index} follows no selector or subquery")
            match = _RANGE.match(text, index + 1)
            if not match or text[match.end() : match.end() + 1] != "]":
                raise PromQLError(f"not a range or subquery at {index}: {text[index:][:20]!r}")
            self.state = "operand"
            return match.end() + 1
        if char in "]}":
            raise PromQLError(f"unbalanced {char!r} at {index}")
        if char.isdigit() or char == ".":
            match = _NUMBER.match(text, index)
            if not match:
                raise PromQLError(f"not a number or duration at {index}: {text[index:][:20]!r}")
            self.operand(index)
            return match.end()
        if match := _IDENT.match(text, index):
            return self.word(match.group(), index, match.end())
        if char == "-" and self.state == "offset":
            return index + 1
        for operator in _OPERATORS:
            if text.startswith(operator, index):
                unary = operator in ("+", "-")
                if not unary and self.state not in VALUE_ENDS:
                    raise PromQLError(f"{operator!r} at {index} has no left operand")
                self.state = "operator"
                return index + len(operator)
        raise PromQLError(f"unexpected {char!r} at {index}")

    def word(self, word: str, index: int, end: int) -> int:
        text = self.text
        after = _skip_space(text, end)
        opens = after < len(text) and text[after] == "("
        if word in LABEL_LIST_KEYWORDS:
            if word in ("by", "without") and self.state not in ("call", "closed"):
                raise PromQLError(f"{word!r} at {index} follows no aggregation")
            if word in ("on", "ignoring", "group_left", "group_right") and (
                self.state != "operator"
            ):
                raise PromQLError(f"{word!r} at {index} follows no binary operator")
            if opens:
                return _label_list(text, after, word)
            if word in OPTIONAL_LABEL_LIST:
                return end
            raise PromQLError(f"{word!r} at {index} needs a label list")
        if word in BINARY_KEYWORDS:
            if self.state not in VALUE_ENDS:
                raise PromQLError(f"{word!r} at {index} has no left operand")
            self.state = "operator"
            return end
        if word == "bool":
            if self.state != "operator":
                raise PromQLError(f"'bool' at {index} follows no comparison")
            return end
        if word == "offset":
            if self.state not in VALUE_ENDS:
                raise PromQLError(f"'offset' at {index} follows no selector")
            self.state = "offset"
            return end
        if word.lower() in NUMBER_WORDS and not opens:
            self.operand(index)
            return end
        if word in AGGREGATIONS or (opens and word in FUNCTIONS):
            self.operand(index, state="call")
            return end
        if opens:
            raise PromQLError(f"{word!r} at {index} is no PromQL function")
        self.operand(index, state="selector")
        self.names.add(word)
        return end


def exported_sample_names(page: str) -> set[str]:
    """Every sample name a /metrics page (text format 0.0.4) can show, from its ``# TYPE``
    lines, so a family with no series yet counts: a counter's, gauge's or untyped's own name
    (a counter's carries ``_total`` in this format), a histogram's ``_bucket``, ``_sum`` and
    ``_count``, a summary's name, ``_sum`` and ``_count``; and every sample line's name."""
    suffixes = {
        "counter": ("",),
        "gauge": ("",),
        "untyped": ("",),
        "histogram": ("_bucket", "_sum", "_count"),
        "summary": ("", "_sum", "_count"),
    }
    names: set[str] = set()
    for line in page.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line[len("# TYPE ") :].split()
            if kind not in suffixes:
                raise ValueError(f"unknown metric type {kind!r} in {line!r}")
            names |= {name + suffix for suffix in suffixes[kind]}
        elif line and not line.startswith("#"):
            names.add(_IDENT.match(line).group())
    return names

"""An SOP's decision rule as code, as the sandbox runs it (the tool-maker's rule tools and the
SOP-Bench decide step): the program around it (``data`` and its fields
defined first, the answer printed last), the checks made before it runs (it reads ``data``, it
catches no error itself), the early exit run as a function, and the printed answer checked."""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import re
from typing import Any


def leading_json(text: str) -> Any:
    """JSON that ``text`` opens with (a note after it, such as the loop guard's, is dropped),
    else the text itself."""
    try:
        return json.JSONDecoder().raw_decode(text.strip())[0]
    except (json.JSONDecodeError, TypeError, AttributeError):
        return text


# A string that is a number written plainly: no sign but minus, no leading zero, no exponent
# (so "0100" and "1e5" stay text: an identifier or code, not a quantity).
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def typed(value: Any) -> Any:
    """A number written as a string (tools over CSV files return every value so) as the
    number; anything else as it is."""
    text = value.strip() if isinstance(value, str) else ""
    if not _NUMBER.fullmatch(text):
        return value
    return float(text) if "." in text else int(text)


MARK = "__sopgraph_answer__"


def parsed(code: str) -> ast.AST | None:
    """``code``'s syntax tree, or None when it does not parse."""
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


_READS = re.compile(r"\bdata\s*(\[|\.get\b)")
_RESERVED = {"data", "answer", "json"}  # the program's own names


def fields(data: dict[str, Any]) -> list[str]:
    """The keys of ``data`` that the program also defines as variables: each that is a plain
    name, not a keyword, a builtin or one of the program's own names. The small model reads
    a few fields as ``data["x"]`` and then writes the rest as bare names, as the procedure
    writes them (``NameError`` on our own shipment_hold and on SOP-Bench); a name that would
    fail anyway now reads its field instead. A name the code assigns is the code's."""
    return [
        k
        for k in data
        if k.isidentifier()
        and not keyword.iskeyword(k)
        and not k.startswith("_")
        and not hasattr(builtins, k)
        and k not in _RESERVED
    ]


def reads(code: str, data: dict[str, Any]) -> bool:
    """The code reads ``data``: indexes it, calls its ``get``, or reads a field's variable."""
    if _READS.search(code):
        return True
    tree = parsed(code)
    names = set(fields(data))
    return tree is not None and any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
        for n in ast.walk(tree)
    )


def program(code: str, data: dict[str, Any]) -> str:
    """The code the sandbox runs: ``data`` defined first, each of its ``fields`` a variable
    too, the answer printed last."""
    return (
        "import json\n"
        f"data = json.loads({json.dumps(data, default=str)!r})\n"
        f"globals().update({{k: data[k] for k in {fields(data)!r}}})\n"
        f"{code}\n"
        f"print({MARK!r} + json.dumps(answer, default=str))\n"
    )


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def checked_answer(
    printed: str, allowed: dict[str, list[str]]
) -> tuple[dict[str, str] | None, str | None]:
    """The answer the code printed, or why it is not usable (one line)."""
    line = next((ln for ln in reversed(printed.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        return None, "it printed no answer"
    value = leading_json(line[len(MARK) :])
    if len(allowed) == 1 and not isinstance(value, dict | list):
        value = {next(iter(allowed)): value}  # one output column: its value given alone
    if not isinstance(value, dict):
        return None, f"`answer` is {type(value).__name__}, not a dict"
    out: dict[str, str] = {}
    for col, vals in allowed.items():
        if col not in value:
            return None, f"`answer` has no {col!r} key"
        text = _text(value[col])
        if vals:
            match = next((v for v in vals if v.lower() == text.lower()), None)
            if match is None:
                return None, f"answer[{col!r}] is {text!r}, not one of {vals}"
            text = match
        elif not text:
            return None, f"answer[{col!r}] is empty"
        out[col] = text
    return out, None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _scope_nodes(tree: ast.AST):
    """The nodes of ``tree`` outside any function, lambda or class it defines."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, _SCOPES):
            continue
        yield node
        yield from _scope_nodes(node)


def catches(code: str) -> bool:
    """The code has a ``try`` of its own: an error it catches is an answer the host never
    sees fail (a value the data lacks turned into a default label)."""
    tree = parsed(code)
    return tree is not None and any(isinstance(n, ast.Try | ast.TryStar) for n in ast.walk(tree))


def _stray_breaks(nodes: Any) -> Any:
    """The ``break`` statements among ``nodes`` outside any loop, function or class (a
    SyntaxError as written); a loop's ``else`` is outside that loop."""
    for node in nodes:
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Break):
            yield node
        elif isinstance(node, _LOOPS):
            yield from _stray_breaks(node.orelse)
        else:
            yield from _stray_breaks(ast.iter_child_nodes(node))


class _Exit(ast.NodeTransformer):
    def __init__(self, breaks: set[int]):
        self.breaks = breaks

    def visit_Break(self, node: ast.Break) -> ast.AST:
        if id(node) not in self.breaks:
            return node
        return ast.copy_location(ast.Return(ast.Name("answer", ast.Load())), node)


def as_function(code: str) -> str:
    """Code that ``return``s outside a function or ``break``s outside a loop (the procedure's
    "no further step applies" written as an early exit) run as the body of one: a bare
    ``return`` or such a ``break`` returns ``answer``, ``return x`` returns ``x``, and
    ``answer`` is what the body returns. Any other code is returned unchanged."""
    tree = parsed(code)
    if tree is None:
        return code
    returns = [n for n in _scope_nodes(tree) if isinstance(n, ast.Return)]
    breaks = {id(n) for n in _stray_breaks(tree.body)}
    if not returns and not breaks:
        return code
    for node in returns:
        if node.value is None:
            node.value = ast.Name("answer", ast.Load())
    tree = _Exit(breaks).visit(tree)
    rule = ast.FunctionDef(
        name="__sopgraph_rule",
        args=ast.arguments([], [], None, [], [], None, []),
        body=[*tree.body, ast.Return(ast.Name("answer", ast.Load()))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    call = ast.Assign(
        [ast.Name("answer", ast.Store())], ast.Call(ast.Name("__sopgraph_rule", ast.Load()), [], [])
    )
    module = ast.Module([rule, call], [])
    return ast.unparse(ast.fix_missing_locations(module))


def _is_data(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "data"


def _compared_strings(tree: ast.AST):
    """The string constants a comparison tests values against (``x == "a"``, ``x in ("a",
    "b")``), not a field name tested against ``data`` itself (``"a_error" in data``)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or any(_is_data(c) for c in node.comparators):
            continue
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, ast.List | ast.Tuple | ast.Set) else [side]
            for item in items:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    yield item.value


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def unstated(code: str, sop: str, answers: list[str], shared: set[str]) -> list[str]:
    """The values the code compares data with that the SOP never states: not in its text,
    not one of its answers, and not a value every input has (``shared``, such as the run
    input's type, which decides nothing). A condition on such a value is one the rule made
    up, usually from an example's data."""
    tree = parsed(code)
    if tree is None:
        return []
    stated = _words(sop)
    known = {_words(a) for a in answers} | {_words(s) for s in shared}
    out: list[str] = []
    for value in _compared_strings(tree):
        norm = _words(value)
        if norm and norm not in known and norm not in stated and value not in out:
            out.append(value)
    return out

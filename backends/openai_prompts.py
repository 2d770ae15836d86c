"""The language role's prompts and answer rules, for `backends/openai_backend.py`.

What is sent and what is accepted, kept apart from how it is sent (the HTTP client, retries, cache and
thread pool stay in `openai_backend.py`, which re-exports every public name here):
- prompt files as versioned Markdown (`load_prompt`, format in its docstring) rendered into chat messages;
- the JSON schemas of the structured output (`REWRITE_SCHEMA`, `pinned_rewrite_schema`, `replace_schema`);
- the format rules every answer must pass before the caller's semantic validator (`check_rewrite`,
  `check_replace`), which a prompt's own examples must pass too (`_check_examples`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hardneg.backends.language import ReplaceRequest, RewriteRequest
from hardneg.backends.untrusted import has_unsafe_chars
from hardneg.core.errors import ConfigError

Task = Literal["rewrite", "replace"]
_MAX_REPLACEMENT_WORDS = 4  # "to the left of" is the longest same-category phrase we expect
_MAX_EXPRESSION_CHARS = 200  # also in the schema: a grammar-constrained small model otherwise rambles to max_tokens
_MAX_REPLACEMENT_CHARS = 40


# ---------------------------------------------------------------------------------------------------------
# Prompt files


@dataclass(frozen=True)
class Prompt:
    """A parsed prompt file: system message, few-shot (input fields, output JSON) pairs and a user template."""

    version: str  # "rewrite.v1": the file name without ".md"
    task: str
    system: str
    examples: tuple[tuple[dict[str, Any], dict[str, Any]], ...]
    user: str

    def render_user(self, fields: Mapping[str, Any]) -> str:
        return _fill(self.user, fields, self.version)

    def messages(self, fields: Mapping[str, Any]) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}]
        for inp, outp in self.examples:
            out.append({"role": "user", "content": self.render_user(inp)})
            out.append({"role": "assistant", "content": json.dumps(outp, ensure_ascii=False)})
        out.append({"role": "user", "content": self.render_user(fields)})
        return out


_SECTION = re.compile(r"^## +(\w+) *$", re.MULTILINE)
_FENCED = re.compile(r"^(input|output):\s*\n```(?:json)?\s*\n(.*?)\n```", re.MULTILINE | re.DOTALL)
_SLOT = re.compile(r"\{(\w+)\}")
_FILE_VERSION = re.compile(r"^(?P<task>[\w-]+)\.(?P<v>v\d+)\.md$")


def _format_slot(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def _fill(template: str, fields: Mapping[str, Any], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in fields:
            raise ValueError(f"{where}: user template slot {{{m.group(1)}}} has no value")
        return _format_slot(fields[m.group(1)])

    return _SLOT.sub(sub, template)


def load_prompt(path: Path) -> Prompt:
    """Parse a prompt file.

    Format (Markdown, editable without touching code):
    - a header between two `---` lines with `key: value` lines; `version: vN` is required and must equal the
      file name's `.vN` part (`rewrite.v1.md`), which is the version recorded in manifests and cache keys;
    - `## system`: the system message;
    - `## example`, repeatable: an `input:` and an `output:` line, each followed by a fenced JSON block;
      the input's fields fill the user template, the output is sent verbatim as the assistant's answer;
    - `## user`: the user template, with `{name}` slots (`{expression}`, `{keep}`, `{part}`, `{word}`,
      `{category}`, `{options}`, `{n}`); lists are joined with ", " ("none" when empty), null is "unknown".
    Anything else (a title, notes) is not sent.
    """
    path = Path(path)
    m = _FILE_VERSION.match(path.name)
    if m is None:
        raise ConfigError(f"prompt file name {path.name!r} is not <task>.v<N>.md")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"prompt file not found: {path}") from None
    header: dict[str, str] = {}
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end < 0:
            raise ConfigError(f"{path}: header opened with --- is never closed")
        for line in text[4:end].splitlines():
            if line.strip():
                k, sep, v = line.partition(":")
                if not sep:
                    raise ConfigError(f"{path}: header line {line!r} is not key: value")
                header[k.strip()] = v.strip()
        text = text[end + 5 :]
    if header.get("version") != m.group("v"):
        raise ConfigError(f"{path}: header version {header.get('version')!r} != file name version {m.group('v')!r}")

    marks = list(_SECTION.finditer(text))
    system, user, examples = None, None, []
    for i, mark in enumerate(marks):
        body = text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
        name = mark.group(1).lower()
        if name == "system":
            system = body
        elif name == "user":
            user = body
        elif name == "example":
            blocks = {k: v for k, v in _FENCED.findall(body)}
            if set(blocks) != {"input", "output"}:
                raise ConfigError(f"{path}: example {len(examples) + 1} needs input: and output: JSON blocks")
            try:
                examples.append((json.loads(blocks["input"]), json.loads(blocks["output"])))
            except json.JSONDecodeError as e:
                raise ConfigError(f"{path}: example {len(examples) + 1} is not valid JSON: {e}") from None
        else:
            raise ConfigError(f"{path}: unknown section '## {mark.group(1)}'")
    if not system or not user:
        raise ConfigError(f"{path}: needs a '## system' and a '## user' section")
    return Prompt(
        f"{m.group('task')}.{m.group('v')}", header.get("task", m.group("task")), system, tuple(examples), user
    )


# ---------------------------------------------------------------------------------------------------------
# Answer format rules (the semantic rules are the caller's `validate`)

REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expressions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": _MAX_EXPRESSION_CHARS},
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["expressions"],
    "additionalProperties": False,
}


def pinned_rewrite_schema(original: str) -> dict[str, Any]:
    """REWRITE_SCHEMA with the first item fixed to `original`: a grammar-following server (llama.cpp) then
    cannot skip or reword the original, which is the small models' most common slip; the two rewrites
    stay free. Only sent in json_object mode: OpenAI's strict structured outputs reject prefixItems."""
    free = {"type": "string", "minLength": 1, "maxLength": _MAX_EXPRESSION_CHARS}
    items = {"type": "array", "prefixItems": [{"const": original}, free, free], "minItems": 3, "maxItems": 3}
    return {**REWRITE_SCHEMA, "properties": {"expressions": items}}


def replace_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "replacements": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": _MAX_REPLACEMENT_CHARS},
                "minItems": 1,
                "maxItems": n,
            }
        },
        "required": ["replacements"],
        "additionalProperties": False,
    }


def normalise(text: str) -> str:
    """Lower case, single spaces, no surrounding space or final period: how answers are compared and kept."""
    return " ".join(text.split()).lower().rstrip(".").rstrip()


def _string_list(raw: str, key: str) -> tuple[list[str] | None, str | None]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"invalid json: {e.msg} at char {e.pos}"
    if not isinstance(data, dict):
        return None, f"invalid json: expected an object, got {type(data).__name__}"
    if key not in data:
        return None, f"missing key '{key}'"
    if extra := sorted(set(data) - {key}):
        return None, f"unexpected keys {extra}"
    items = data[key]
    if not isinstance(items, list):
        return None, f"'{key}' is not a list"
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            return None, f"'{key}'[{i}] is not a string"
        if has_unsafe_chars(item):  # terminal escapes, lone surrogates: text no dataset file should hold
            return None, f"'{key}'[{i}] has control characters"
        if not (item := normalise(item)):
            return None, f"'{key}'[{i}] is empty"
        out.append(item)
    return out, None


def check_rewrite(request: RewriteRequest, raw: str) -> tuple[tuple[str, ...] | None, str | None]:
    """(values, None) when `raw` is {"expressions": [original, rewrite, rewrite]}, else (None, reason)."""
    items, reason = _string_list(raw, "expressions")
    if items is None:
        return None, reason
    if len(items) != 3:
        return None, f"expected 3 expressions, got {len(items)}"
    original = normalise(request.expression)
    if items[0] != original:
        return None, f"first expression is not the original: {items[0]!r}"
    for r in items[1:]:
        if r == original:
            return None, f"repeats the original: {r!r}"
    if items[1] == items[2]:
        return None, f"rewrites are identical: {items[1]!r}"
    for r in items[1:]:
        if len(r) > _MAX_EXPRESSION_CHARS:
            return None, f"too long ({len(r)} characters): {r[:60]!r}..."
    return tuple(items), None


def check_replace(request: ReplaceRequest, raw: str) -> tuple[tuple[str, ...] | None, str | None]:
    """(values, None) when `raw` is {"replacements": [1..n short phrases]}, else (None, reason)."""
    items, reason = _string_list(raw, "replacements")
    if items is None:
        return None, reason
    items = list(dict.fromkeys(items))  # duplicates are noise, not an error
    if not 1 <= len(items) <= request.n:
        return None, f"expected 1 to {request.n} replacements, got {len(items)}"
    word = normalise(request.word)
    for r in items:
        if r == word:
            return None, f"repeats the original: {r!r}"
        if len(r.split()) > _MAX_REPLACEMENT_WORDS:
            return None, f"too long ({len(r.split())} words): {r!r}"
        if len(r) > _MAX_REPLACEMENT_CHARS:
            return None, f"too long ({len(r)} characters): {r[:60]!r}..."
    return tuple(items), None


def rewrite_fields(request: RewriteRequest) -> dict[str, Any]:
    return {"expression": request.expression, "keep": list(request.keep)}


def replace_fields(request: ReplaceRequest) -> dict[str, Any]:
    return {
        "expression": request.expression,
        "part": request.part,
        "word": request.word,
        "category": request.category,
        "options": list(request.options),
        "n": request.n,
    }


def _check_examples(prompt: Prompt, path: Path) -> None:
    """A prompt's own examples must obey the rules the model is held to."""
    for i, (inp, outp) in enumerate(prompt.examples, 1):
        raw = json.dumps(outp)
        try:
            if prompt.task == "rewrite":
                _, reason = check_rewrite(RewriteRequest("example", inp["expression"], tuple(inp["keep"])), raw)
            else:
                req = ReplaceRequest(
                    "example",
                    inp["expression"],
                    inp["part"],
                    inp["word"],
                    inp["category"],
                    tuple(inp["options"]),
                    inp["n"],
                )
                _, reason = check_replace(req, raw)
        except (KeyError, TypeError) as e:
            raise ConfigError(f"{path}: example {i} input lacks field {e}") from None
        if reason is not None:
            raise ConfigError(f"{path}: example {i} breaks the answer rules: {reason}")
        prompt.render_user(inp)  # every slot filled

"""What a model role needs before a run starts, and the check that says, in one line, what is missing.

Every model role the config turns on (a filter's model, the diffusers inpainting backend, the language
server) lists its `Requirement`s: the Python packages it imports, the weights it loads and the server it
talks to. `check` finds what is missing without loading anything: packages by `importlib.util.find_spec`,
weights as a local folder or in the local Hugging Face (or torch.hub) cache, or, when nothing is cached,
on a hub that answers, and a server by one short request. `flows/preflight.py` runs the checks of the
stages a run still has to do before the first stage starts, so a missing piece is one line and exit 2
in seconds, not a traceback after an hour of work.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hardneg.core.secrets import shown_url

WeightsKind = Literal["huggingface", "torch.hub"]
HUB_TIMEOUT_S = 5.0
SERVER_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Weights:
    """Model weights a role loads: a local folder or a hub id (`ref`), with the file that marks a complete
    one (`config.json` for a transformers model or a diffusers model, `model_index.json` for a diffusers
    pipeline, `hubconf.py` for a torch.hub repository)."""

    ref: str
    marker: str = "config.json"
    kind: WeightsKind = "huggingface"


@dataclass(frozen=True, slots=True)
class Server:
    """An OpenAI-compatible server the role calls (`base_url` ends in `/v1`), with the env var of its key."""

    base_url: str
    key_env: str | None = None


@dataclass(frozen=True, slots=True)
class Requirement:
    role: str  # what the config calls it: "filters.scorers.clip", "images.backend diffusers"
    packages: tuple[str, ...] = ()  # import names
    install: str = ""  # the command that installs the packages
    weights: tuple[Weights, ...] = ()
    server: Server | None = None


def check(req: Requirement) -> str | None:
    """Why `req` cannot be met here, as one line naming the role, the missing piece and what to do; None
    when everything is there."""
    if missing := [p for p in req.packages if importlib.util.find_spec(p) is None]:
        return f"{req.role} needs {', '.join(missing)}, not installed here: {req.install}"
    for w in req.weights:
        if why := _weights_problem(w):
            return f"{req.role}: {why}"
    if req.server is not None and (why := _server_problem(req.server)):
        return f"{req.role}: {why}"
    return None


def _weights_problem(w: Weights) -> str | None:
    local = Path(w.ref).expanduser()
    if local.exists() or w.ref.startswith(("/", ".", "~")) or w.ref.count("/") > 1:
        if not local.is_dir():
            return f"model folder {w.ref} not found (give a folder of the model's files or a hub id)"
        if not (local / w.marker).is_file():
            return f"{w.ref} is not a model folder: it has no {w.marker}"
        return None
    if w.kind == "torch.hub":
        return _torch_hub_problem(w.ref)
    return _hub_problem(w.ref, w.marker)


def _hub_problem(repo_id: str, marker: str) -> str | None:
    """None when the Hugging Face cache holds `repo_id` (its marker file), or the hub can serve it now."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # the role's packages (transformers, diffusers) bring it; reported above
        return None
    if isinstance(try_to_load_from_cache(repo_id, marker), str):
        return None
    offline = any(
        os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )
    hint = (
        f"download it where there is network (`hf download {repo_id}`) into the cache this machine reads "
        "(HF_HOME), or put a local folder of it in the config"
    )
    if offline:
        return f"{repo_id} is not in the local Hugging Face cache and the hub is off (HF_HUB_OFFLINE): {hint}"
    import httpx

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        r = httpx.get(f"{endpoint}/api/models/{repo_id}", timeout=HUB_TIMEOUT_S, follow_redirects=True)
    except httpx.HTTPError as e:
        why = type(e).__name__
        return f"{repo_id} is not in the local Hugging Face cache and {endpoint} cannot be reached ({why}): {hint}"
    if r.status_code == 404:
        return f"{repo_id} is no model on {endpoint} and not in the local cache (a typo?)"
    return None


def _torch_hub_problem(repo: str) -> str | None:
    """A torch.hub GitHub repository must be in torch.hub's cache already (`owner_name_ref` folders)."""
    owner, _, rest = repo.partition("/")
    name = rest.split(":", 1)[0]
    home = Path(os.environ.get("TORCH_HOME", Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "torch"))
    hub = home.expanduser() / "hub"
    if any(hub.glob(f"{owner}_{name}_*")):
        return None
    return (
        f"torch.hub repository {repo} is not in torch.hub's cache ({hub}): load it once where there is network, "
        "or clone it and use `source: local` with `repo_or_dir` naming the folder"
    )


def _server_problem(server: Server) -> str | None:
    """One GET of `<base_url>/models`: any answer but a refused key means a server is there."""
    import httpx

    headers = {}
    if server.key_env and (key := os.environ.get(server.key_env)):
        headers["Authorization"] = f"Bearer {key}"
    url = server.base_url.rstrip("/") + "/models"
    shown = shown_url(server.base_url)
    try:
        r = httpx.get(url, headers=headers, timeout=SERVER_TIMEOUT_S)
    except httpx.HTTPError as e:
        return f"no server answers at {shown} ({type(e).__name__}); start it, or set the base URL the config names"
    if r.status_code in (401, 403):
        where = f"${server.key_env}" if server.key_env else "no key"
        return f"the server at {shown} refuses the API key ({where}; HTTP {r.status_code})"
    return None

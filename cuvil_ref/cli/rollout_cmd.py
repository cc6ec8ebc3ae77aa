"""``cuvil rollout status|promote|rollback MODEL``: operate a running server's rollouts.

Talks to the server's HTTP port (``--url``, default ``http://127.0.0.1:8000``; the
``CUVIL_SERVER`` environment variable too) through the routes ``GET /v2/models/M/rollout`` and
``POST /v2/models/M/rollout/{promote,rollback}``. ``status`` prints the stable version, the
version being rolled out with its step, traffic share, counters and probes, the refused
versions and the recent transitions (``--json`` for the document itself).
"""

from __future__ import annotations

import datetime as _dt
import json
import urllib.error
import urllib.request
from typing import Any

import click

from cuvil_ref.errors import CuvilError

URL_HELP = "The server's HTTP address (default http://127.0.0.1:8000, or $CUVIL_SERVER)."


def call(url: str, model: str, action: str | None = None, body: Any = None) -> dict[str, Any]:
    """One request to the rollout routes; a server error becomes a CuvilError with its text."""
    base = url if "://" in url else f"http://{url}"
    path = f"{base.rstrip('/')}/v2/models/{model}/rollout" + (f"/{action}" if action else "")
    data = None if action is None else json.dumps(body or {}).encode()
    req = urllib.request.Request(path, data=data, method="POST" if action else "GET")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error", exc.reason)
        except ValueError:
            message = exc.reason
        raise CuvilError(f"{path}: {exc.code} {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CuvilError(
            f"cannot reach the server at {base} ({reason}); is `cuvil serve` running there? "
            "(--url or CUVIL_SERVER)"
        ) from None


def render(doc: dict[str, Any]) -> str:
    """``status`` as text."""
    lines = [f"model {doc['model']}: stable version {doc['stable']}, serving {doc['serving']}"]
    c = doc.get("candidate")
    if c:
        steps = " -> ".join(
            f"[{p}%]" if i == c["step"] else f"{p}%" for i, p in enumerate(c["steps"])
        )
        lines.append(
            f"  rolling out version {c['version']}: {c['state']} at {c['percent']}% ({steps})"
        )
        lines.append(
            f"  this step: {c['step_requests']} requests, {c['step_errors']} errors "
            f"({c['step_error_rate']:.2%}); in all: {c['requests']} requests, {c['errors']} "
            f"errors; probes passed {c['probes_passed']}, failed in a row "
            f"{c['probes_failed_in_a_row']}"
        )
    elif doc.get("loading"):
        lines.append("  loading a new version")
    else:
        lines.append("  no rollout in progress")
    for v, why in doc.get("refused", {}).items():
        lines.append(f"  refused version {v}: {why}")
    history = doc.get("history", [])[-10:]
    if history:
        lines.append("  recent transitions:")
        for t in history:
            ts = _dt.datetime.fromtimestamp(t["ts"]).strftime("%H:%M:%S")
            lines.append(
                f"    {ts}  v{t['version']:<3} {t['state']:<11} {t['percent']:>3}%  {t['reason']}"
            )
    return "\n".join(lines)


@click.group("rollout")
def rollout() -> None:
    """Show, advance or roll back a running server's rollout of a model."""


@rollout.command("status")
@click.argument("model")
@click.option("--url", envvar="CUVIL_SERVER", default="http://127.0.0.1:8000", help=URL_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
def status_command(model: str, url: str, as_json: bool) -> None:
    """The rollout state of MODEL."""
    doc = call(url, model)
    click.echo(json.dumps(doc, indent=2) if as_json else render(doc))


@rollout.command("promote")
@click.argument("model")
@click.option("--url", envvar="CUVIL_SERVER", default="http://127.0.0.1:8000", help=URL_HELP)
@click.option("--full", is_flag=True, help="Skip the remaining steps: 100% now.")
def promote_command(model: str, url: str, full: bool) -> None:
    """Advance MODEL's rollout one step now (resumes a paused one), or to 100% with --full."""
    click.echo(render(call(url, model, "promote", {"full": full})))


@rollout.command("rollback")
@click.argument("model")
@click.option("--url", envvar="CUVIL_SERVER", default="http://127.0.0.1:8000", help=URL_HELP)
def rollback_command(model: str, url: str) -> None:
    """Drop MODEL's new version (all traffic back to the stable one), or -- with no rollout in
    progress -- restore the previous good version."""
    click.echo(render(call(url, model, "rollback")))

"""``/api/v1/ips/{id}/characters``: an IP's characters and their aliases (``lib.segments.character_store``),
read by anyone, changed by the operator (the token, as requeue and purge of dead letters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path
from fastapi.exceptions import RequestValidationError

from lib.core.clock import to_timestamp
from lib.segments import character_store as store
from lib.segments.character_rules import NAME_MAX_LENGTH, CharacterListError, MatcherConflict
from lib.segments.stored import resegment
from lib.web import schemas
from lib.web.api import IpId, WebContext, context, db_session, operator, problems

router = APIRouter(prefix="/api/v1", dependencies=[Depends(db_session)])

#: The 409 of a change: what the document cannot state of names and aliases.
CONFLICT: dict[int | str, dict[str, Any]] = {409: {"model": schemas.Problem,
                  "description": "Conflict: a name or alias with no letter or digit (no title could name it), or "
                                 "two that the matcher reads as one word (its folded spelling: any width, script or "
                                 "case), within a character or across two (a word names one character)"}}


def _listing(ip_id: int) -> dict[str, Any]:
    rows = store.stored_characters(ip_id)  # an unknown IP: 404 (lib.web.app)
    return {"ip_id": ip_id, "characters": [
        {"name": r.name, "aliases": list(r.aliases), "created_at": to_timestamp(r.created_at),
         "updated_at": to_timestamp(r.updated_at)} for r in rows]}


def _changing(ctx: WebContext, ip_id: int, change: Callable[[], object],
              where: tuple[str | int, ...]) -> dict[str, Any]:
    """The list after ``change()`` (truthy: it changed something), with the refusals as statuses (an unknown IP:
    404, lib.web.app). A change segments the IP's stored listings again, so that its character segments follow the
    list at once."""
    try:
        changed = bool(change())
    except MatcherConflict as e:
        raise HTTPException(409, str(e)) from None
    except CharacterListError as e:  # what the body's schema states, should pydantic have let it through
        raise RequestValidationError([{"type": "value_error", "loc": ("body", *where), "msg": str(e),
                                       "input": None}]) from None
    resegmented = None
    if changed:
        report = resegment(ctx.settings, ctx.read_side, ip_id)
        resegmented = {"listings": report.listings, "added": report.added, "removed": report.removed}
    return {**_listing(ip_id), "changed": changed, "resegmented": resegmented}


@router.get("/ips/{ip_id}/characters", response_model=schemas.CharacterList, responses=problems(404))
def characters(ip_id: IpId) -> Any:
    return _listing(ip_id)


@router.put("/ips/{ip_id}/characters", response_model=schemas.CharacterChange,
            responses={**problems(400, 401, 403, 404), **CONFLICT}, dependencies=[Depends(operator)])
def replace_characters(ip_id: IpId, body: schemas.CharactersIn, ctx: WebContext = Depends(context)) -> Any:
    """Make the body the IP's whole list (characters kept keep their creation time). A change segments the IP's
    stored listings again before the answer (`resegmented`)."""
    wanted = [(c.name, c.aliases) for c in body.characters]
    return _changing(ctx, ip_id, lambda: store.replace_characters(ip_id, wanted).any, ("characters",))


@router.post("/ips/{ip_id}/characters", response_model=schemas.CharacterChange,
             responses={**problems(400, 401, 403, 404), **CONFLICT}, dependencies=[Depends(operator)])
def add_character(ip_id: IpId, body: schemas.CharacterIn, ctx: WebContext = Depends(context)) -> Any:
    """Add a character at the end of the list or, when it is listed (its name as the matcher reads it), add
    the aliases it lacks. A change segments the IP's stored listings again before the answer (`resegmented`)."""
    return _changing(ctx, ip_id, lambda: store.add_character(ip_id, body.name, body.aliases).any, ())


@router.delete("/ips/{ip_id}/characters/{name:path}", response_model=schemas.CharacterChange,
               responses=problems(401, 403, 404), dependencies=[Depends(operator)])
def remove_character(ip_id: IpId,
                     name: Annotated[str, Path(min_length=1, max_length=NAME_MAX_LENGTH,
                                               description="the character's name, as the matcher reads it "
                                                           "(`Gojo` removes `gojo`)")],
                     ctx: WebContext = Depends(context)) -> Any:
    """Remove a character. One not listed is no error (`changed`: false): a removal can be repeated. A removal
    segments the IP's stored listings again before the answer (`resegmented`)."""
    return _changing(ctx, ip_id, lambda: store.remove_character(ip_id, name), ())

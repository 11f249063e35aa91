"""``animetop enqueue`` and ``deadletters``."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from lib.cli.common import app_broker, command


@command("enqueue")
def cmd_enqueue(args) -> int:
    from dramatiq.errors import ActorNotFound

    from lib.core.errors import BadMessage
    from lib.messaging.middleware.arguments import check_arguments

    try:
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
    except json.JSONDecodeError as e:
        print(f"animetop enqueue: the arguments are not JSON: {e}", file=sys.stderr)
        return 2
    if not isinstance(kwargs, dict):
        print("animetop enqueue: the arguments must be a JSON object of keyword arguments", file=sys.stderr)
        return 2
    broker = app_broker()
    try:
        actor = broker.get_actor(args.actor)
    except ActorNotFound:
        print(f"animetop enqueue: no actor {args.actor!r}; actors: {', '.join(sorted(broker.actors))}",
              file=sys.stderr)
        return 2
    try:
        check_arguments(actor.fn, (), kwargs)
    except BadMessage as e:
        print(f"animetop enqueue: {e}", file=sys.stderr)
        return 2
    message = actor.send_with_options(kwargs=kwargs, delay=args.delay_ms)
    print(message.message_id)
    return 0


@command("deadletters")
def cmd_deadletters(args) -> int:
    from lib.messaging.dead_letters import DeadLetters, NotRequeueable

    broker = app_broker()
    letters = DeadLetters.for_broker(broker, broker.reasons)
    if args.action == "list":
        rows = letters.list(args.queue)
        if args.format == "json":
            print(json.dumps([r.as_dict() for r in rows], ensure_ascii=False, default=str, indent=2))
            return 0
        if not rows:
            print("no dead letters")
            return 0
        print(f"{'ID':36}  {'QUEUE':12} {'ACTOR':18} {'RETRIES':>7}  {'DEAD AT (UTC)':19}  REASON")
        for r in rows:
            when = datetime.fromtimestamp(r.dead_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if r.dead_at else "?"
            reason = (r.as_dict()["reason"] or "").splitlines()[0][:80] if r.as_dict()["reason"] else ""
            print(f"{r.id:36}  {r.queue:12} {r.actor:18} {r.retries:>7}  {when:19}  {reason}")
        print(f"{len(rows)} dead letter(s)")
        return 0
    if args.action == "show":
        letter = letters.get(args.ids[0]) if args.ids else None
        if letter is None:
            print(f"animetop deadletters: no dead letter {args.ids[0] if args.ids else ''!r}", file=sys.stderr)
            return 1
        print(json.dumps(letter.as_dict(), ensure_ascii=False, default=str, indent=2))
        return 0
    if args.action == "requeue":
        if not args.ids and not args.all:
            print("animetop deadletters requeue: name IDs or --all", file=sys.stderr)
            return 2
        try:
            done = letters.requeue(None if args.all else args.ids, args.queue)
        except NotRequeueable as e:
            print(f"animetop deadletters requeue: {e}", file=sys.stderr)
            return 1
        for letter in done:
            print(f"requeued {letter.message_id} ({letter.actor} on {letter.queue})")
        missing = set(args.ids or ()) - {i for letter in done for i in (letter.id, letter.message_id)}
        for ident in sorted(missing):
            print(f"animetop deadletters: no dead letter {ident!r}", file=sys.stderr)
        print(f"{len(done)} requeued")
        return 1 if missing else 0
    if args.action == "purge":
        count = letters.purge(args.queue)
        print(f"{count} dead letter(s) purged")
        return 0
    return 2

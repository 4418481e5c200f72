"""Exception -> one line on stderr and an exit code (1: the input or the index; 2: the command
line; 130: interrupted). ``--debug`` adds the traceback."""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import typer
from rich.markup import escape

from drag_knee_retriever.errors import CliError, DragKneeError
from drag_knee_retriever.cli.options import DEBUG_ENV, EXIT_ERROR, EXIT_INTERRUPTED, app, state
from drag_knee_retriever.cli.output import configure_logging, err


def _os_error_message(exc: OSError) -> str:
    name = getattr(exc, "filename", None)
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return f"Permission denied: {name or ''}; check the permissions, or choose another --index folder.".replace(": ;", ";")
    if getattr(exc, "errno", None) == 28:
        return f"No space left on the device{f' ({name})' if name else ''}; free some space and run the command again."
    return f"{reason}{f': {name}' if name else ''}."


def _click_class(name: str) -> type:
    # Typer >= 0.20 vendors its own copy of click; earlier versions use click itself. Take the
    # classes from typer's public exceptions so both work.
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    raise RuntimeError(f"typer.BadParameter has no {name} base")  # pragma: no cover


_CLICK_ERROR = _click_class("ClickException")
_EXIT = typer.Exit
_ABORT = typer.Abort


def run(argv: Optional[Sequence[str]] = None) -> int:
    """Run the app on ``argv`` (default ``sys.argv[1:]``); every known failure becomes one line on
    stderr and its exit code, which is returned."""
    state["debug"] = os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes")
    configure_logging(0)
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = command.main(args=args, prog_name="drag-knee", standalone_mode=False)
    except _EXIT as exc:  # pragma: no cover - returned, not raised, in non-standalone mode
        code = exc.exit_code
    except _CLICK_ERROR as exc:  # bad options or arguments: exit code 2
        code = exc.exit_code
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show(file=sys.stderr)  # a bare `drag-knee` or `drag-knee docs`: show the help
        else:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            _fail(f"{exc.format_message()}{hint}", code, exc)
    except (_ABORT, KeyboardInterrupt):
        err.print("drag-knee: interrupted.", style="red")
        code = EXIT_INTERRUPTED
    except CliError as exc:
        code = _fail(str(exc), exc.code, exc)
    except DragKneeError as exc:
        code = _fail(str(exc), EXIT_ERROR, exc)
    except ImportError as exc:
        code = _fail(str(exc), EXIT_ERROR, exc)
    except OSError as exc:
        code = _fail(_os_error_message(exc), EXIT_ERROR, exc)
    except Exception as exc:  # a bug: still one line, with the way to get the details
        code = _fail(
            f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback and please report it).",
            EXIT_ERROR,
            exc,
        )
    return code if isinstance(code, int) else 0


def _fail(message: str, code: int, exc: BaseException) -> int:
    if state["debug"]:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    # One line: messages may quote multi-line library errors; keep the first meaningful line.
    line = " ".join(message.split())
    err.print(f"drag-knee: error: {escape(line)}", style="red", soft_wrap=True)
    return code



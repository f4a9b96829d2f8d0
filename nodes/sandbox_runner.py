"""Child side of the sandbox: runs the generated code under Python-level guards.

This file is executed as `python -I -S -c <this source> <config json>` inside the jail; it
imports nothing from the project. The guards (an import allow-list, an audit hook that stops
the program on the first process, network, ctypes or out-of-directory file operation) exist
to give clear reasons; containment itself is the jail's job. Tool calls are JSON lines on a
request pipe, answered on a reply pipe by the parent, which alone decides what is allowed.
"""

import builtins
import errno
import json
import os
import signal
import sys
import traceback

VIOLATION_EXIT = 86
USER_FILE = "<sandbox>"
# Imported by C code on behalf of allowed modules, so they look like the user's imports.
IMPLICIT_IMPORTS = frozenset({"_strptime", "encodings", "unicodedata"})


class ToolNotAllowed(Exception):
    """The node may not call this tool."""


class ToolError(Exception):
    """The tool ran and failed."""


def _send(fd, msg):
    data = (json.dumps(msg, default=str) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _recv_line(fd):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            raise ToolError("tool channel closed by the host")
        buf += chunk
    return json.loads(buf)


def _make_tool_caller(req_fd, rep_fd):
    def call_tool(name, args=None, /, **kwargs):
        """Call an MCP tool through the host: `call_tool("execute_query", {"sql": ...})`."""
        payload = dict(args or {}, **kwargs)
        sys.stdout.flush()
        _send(req_fd, {"type": "tool", "tool": str(name), "args": payload})
        reply = _recv_line(rep_fd)
        if reply.get("refused"):
            raise ToolNotAllowed(reply["error"])
        if "error" in reply:
            raise ToolError(reply["error"])
        return reply.get("result")

    return call_tool


def _tool_function(call_tool, name):
    def tool(args=None, /, **kwargs):
        return call_tool(name, args, **kwargs)

    tool.__name__ = name
    return tool


def _install_guards(cfg, report):
    """Import allow-list and audit hook. Nothing here may keep a flag user code could flip."""
    allowed = frozenset(cfg["allowed_imports"])
    stdlib = os.path.dirname(os.__file__)
    readable = (stdlib + os.sep, "/usr/share/zoneinfo/")  # zoneinfo reads its tz database
    work = os.path.realpath(os.getcwd())
    real_import = builtins.__import__
    denied_modules = frozenset(cfg["denied_modules"])
    getframe = sys._getframe
    realpath = os.path.realpath
    exit_now = os._exit

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        caller = getframe(1).f_code.co_filename
        if not (caller.startswith(stdlib) or caller.startswith("<frozen")):
            top = name.partition(".")[0]
            if level or (top not in allowed and top not in IMPLICIT_IMPORTS):
                raise ImportError(
                    f"blocked import: {name} (allowed: {', '.join(sorted(allowed))})", name=name
                )
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded_import

    def stop(reason):
        report(False, f"SandboxViolation: {reason}", reason)
        exit_now(VIOLATION_EXIT)

    def inside(path):
        return path == work or path.startswith(work + os.sep)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                if path not in (None, 0, 1, 2):
                    stop(f"file access outside sandbox: fd {path}")
                return
            path = os.fsdecode(path)
            full = realpath(path)
            writing = (mode and mode != "r" and mode != "rb") or (flags & 0o3)
            if inside(full) or (not writing and full.startswith(readable)):
                return
            stop(f"file access outside sandbox: {path}")
        elif event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
                       "os.symlink", "os.link", "os.truncate", "os.utime", "os.listdir",
                       "os.scandir", "os.chdir"):  # fmt: skip
            path = args[0]
            if isinstance(path, (str, bytes)) and inside(realpath(os.fsdecode(path))):
                return
            stop(f"file access outside sandbox: {event} {path!r}")
        elif event.startswith("socket."):
            stop("network disabled")
        elif event.startswith("ctypes."):
            stop("blocked: ctypes")
        elif event == "os.system":
            stop("blocked: os.system")
        elif event in ("subprocess.Popen", "os.posix_spawn", "os.spawn", "pty.spawn"):
            stop("blocked: subprocess")
        elif event in ("os.fork", "os.forkpty"):
            stop("blocked: fork")
        elif event in ("os.exec", "os.startfile"):
            stop("blocked: exec")
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            stop("blocked: signal")
        elif event in ("object.__setattr__", "object.__delattr__") and args[1] == "__code__":
            stop("blocked: replacing a function's code")
        elif event in ("code.__new__", "sys.setprofile", "sys.settrace"):
            stop(f"blocked: {event}")
        elif event == "import" and args[0].partition(".")[0] in denied_modules:
            stop(f"blocked import: {args[0]}")
        elif event in ("mmap.__new__", "os.setxattr", "os.removexattr", "resource.setrlimit"):
            stop(f"blocked: {event}")

    sys.addaudithook(hook)


def _classify(exc, tb_text):
    """One short reason for an uncaught exception."""
    if isinstance(exc, MemoryError):
        return "memory limit"
    if isinstance(exc, RecursionError):
        return "recursion limit"
    if isinstance(exc, ToolNotAllowed) or (
        isinstance(exc, ImportError) and str(exc).startswith("blocked import")
    ):
        return str(exc).split(" (allowed", 1)[0]
    if isinstance(exc, OSError):
        if exc.errno == errno.EFBIG:
            return "file size limit"
        if exc.errno == errno.ENOSPC:
            return "disk limit"
        if exc.errno == errno.EAGAIN:
            return "process limit"
        if exc.errno == errno.EMFILE:
            return "open file limit"
        if "socket" in tb_text or exc.errno in (errno.ENETUNREACH, errno.ENETDOWN):
            return "network disabled"
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"permission denied: {exc.filename or ''}".rstrip(": ")
        if exc.errno == errno.ENOENT:
            return f"not found: {exc.filename}"
    return f"error: {type(exc).__name__}"


def main():
    cfg = json.loads(sys.argv[1])
    req_fd, rep_fd = cfg["req_fd"], cfg["rep_fd"]
    code = sys.stdin.read()
    sys.stdin.close()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # so a big write fails with EFBIG, clearly
    for name in cfg["allowed_imports"]:
        try:
            __import__(name)
        except ImportError:
            pass
    # Warm what error reporting and C-level lazy imports use, before any import is guarded.
    import _strptime  # noqa: F401
    import linecache

    done = []

    def report(ok, error, reason):
        if done:
            return
        done.append(1)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        _send(req_fd, {"type": "done", "ok": ok, "error": error, "reason": reason})

    call_tool = _make_tool_caller(req_fd, rep_fd)
    if cfg["guard"]:
        _install_guards(cfg, report)
    user_builtins = dict(vars(builtins))
    for name in ("breakpoint", "input", "help", "exit", "quit", "copyright", "credits", "license"):
        user_builtins.pop(name, None)
    g = {"__name__": "__main__", "__builtins__": user_builtins, "call_tool": call_tool}
    g["ToolNotAllowed"], g["ToolError"] = ToolNotAllowed, ToolError
    for name in cfg["tools"]:
        if name.isidentifier() and name not in g:
            g[name] = _tool_function(call_tool, name)
    linecache.cache[USER_FILE] = (len(code), None, code.splitlines(True), USER_FILE)
    try:
        exec(compile(code, USER_FILE, "exec"), g)
    except SystemExit as e:
        ok = e.code in (None, 0)
        report(ok, None if ok else f"SystemExit: {e.code}", None if ok else "exit status")
    except BaseException as e:  # noqa: BLE001 - everything the code raises is its result
        g.clear()  # frees a memory balloon before formatting
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-8))
        report(False, tb[-4000:], _classify(e, tb))
    else:
        report(True, None, None)


main()

"""Child side of the sandbox: runs the generated code under Python-level guards.

This file is executed as `python -I -S -c <this source> <config json>` inside the jail; it
imports nothing from the project. The guards (an import allow-list, an audit hook that stops
the program on the first process, network, ctypes, out-of-directory file operation or load of
a module outside the list) exist to give clear reasons; containment itself is the jail's job.
Tool calls are JSON lines on a request pipe, answered on a reply pipe by the parent, which
alone decides what is allowed. The outcome is the exit status (0 finished, 1 raised, 86
stopped by the guard), which the host reads from the jail's supervisor; the one `detail` line
sent at the end only explains a failure and can never turn one into a success.
"""

import builtins
import errno
import json
import os
import signal
import sys
import traceback

EXIT_OK, EXIT_ERROR, EXIT_VIOLATION = 0, 1, 86
USER_FILE = "<sandbox>"
# Imported by C code on behalf of allowed modules, so they look like the user's imports.
IMPLICIT_IMPORTS = frozenset({
    "_strptime", "encodings", "unicodedata", "stringprep", "__future__", "_multibytecodec", "_codecs_cn",
    "_codecs_hk", "_codecs_iso2022", "_codecs_jp", "_codecs_kr", "_codecs_tw",
})  # fmt: skip
_FILE_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
    "os.link", "os.truncate", "os.utime", "os.listdir", "os.scandir", "os.chdir",
})  # fmt: skip
_BLOCKED_EVENTS = frozenset({
    "code.__new__", "sys.settrace", "sys.setprofile", "sys.addaudithook", "mmap.__new__",
    "os.setxattr", "os.removexattr", "resource.setrlimit", "sqlite3.connect",
    "sqlite3.connect/handle", "sqlite3.enable_load_extension", "sqlite3.load_extension",
    "_posixsubprocess.fork_exec", "sys._current_frames", "cpython.PyInterpreterState_New",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "_thread.start_new_thread",
})  # fmt: skip


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


def _make_detail(fd):
    """Sends the one line that explains a failure, built from C functions only, so that code
    which patched `json` or `os` cannot make the guard's own report run its code."""
    quote = json.encoder.c_encode_basestring_ascii or json.encoder.py_encode_basestring_ascii
    write, as_str, encode, os_error = os.write, str.__str__, str.encode, OSError

    def detail(error, reason):
        parts = []
        for value in (error, reason):
            parts.append("null" if value is None else quote(as_str(value)))
        line = f'{{"type": "detail", "error": {parts[0]}, "reason": {parts[1]}}}\n'
        data = encode(line, "ascii")
        try:
            while data:
                data = data[write(fd, data) :]
        except os_error:
            pass

    return detail


def _install_guards(cfg, detail):
    """Audit hook (the enforcing part) and a guarded `__import__` for the user's builtins.

    The hook runs no Python code the user could have patched: only C functions captured here
    and methods of exact `str`/`bytes`, so nothing the user controls executes inside it and
    its closure is never on a stack the user can walk. Returns the guarded import.
    """
    allowed = frozenset(cfg["allowed_imports"])
    loadable = allowed | IMPLICIT_IMPORTS
    denied_modules = frozenset(cfg["denied_modules"])
    stdlib = os.path.dirname(os.__file__)
    readable = (stdlib + os.sep, "/usr/share/zoneinfo/")  # zoneinfo reads its tz database
    work = os.path.realpath(os.getcwd())
    exit_now, readlink, getcwd = os._exit, os.readlink, os.getcwd
    meta_path, path_hooks = tuple(sys.meta_path), tuple(sys.path_hooks)
    as_str, partition, split, join = str.__str__, str.partition, str.split, str.join
    starts, decode = str.startswith, bytes.decode
    code_type = type(_install_guards.__code__)
    pending_loads = [0]  # module bodies the import machinery may unmarshal (see "import")
    # Builtins are looked up at call time and the user can reach the builtins module: the
    # hook uses its own references.
    type_, issubclass_, len_, zip_, int_, str_, bytes_, list_, os_error = (
        type,
        issubclass,
        len,
        zip,
        int,
        str,
        bytes,
        list,
        OSError,
    )

    def stop(reason):
        detail(f"SandboxViolation: {reason}", reason)
        exit_now(EXIT_VIOLATION)

    def text(path):
        """An exact str for a path argument; a path-like object would run user code."""
        kind = type_(path)
        if issubclass_(kind, bytes_):
            return decode(path, "utf-8", "surrogateescape")
        if issubclass_(kind, str_):
            return as_str(path)
        stop("file access through a path-like object")

    def real(path):
        """`os.path.realpath` from C calls only (posixpath's globals are the user's to patch)."""
        if not starts(path, "/"):
            path = getcwd() + "/" + path
        todo, out, hops = split(path, "/")[::-1], [], 0
        while todo:
            comp = todo.pop()
            if comp in ("", "."):
                continue
            if comp == "..":
                if out:
                    out.pop()
                continue
            cand = "/" + join("/", out + [comp])
            try:
                target = readlink(cand)
            except os_error:
                out.append(comp)
                continue
            hops += 1
            if hops > 40:
                return cand
            if starts(target, "/"):
                out = []
            todo.extend(split(target, "/")[::-1])
        return "/" + join("/", out)

    def same(items, snapshot):
        """By identity only: comparing with == would call the user's __eq__. (C-level imports
        pass None; with None as sys.meta_path nothing could be imported at all.)"""
        if items is None:
            return True
        if type_(items) is not list_ or len_(items) != len_(snapshot):
            return False
        for a, b in zip_(items, snapshot):
            if a is not b:
                return False
        return True

    def inside(path):
        return path == work or starts(path, work + "/")

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if type_(path) is int_ or path is None:
                if path not in (None, 0, 1, 2):
                    stop(f"file access outside sandbox: fd {path}")
                return
            path = text(path)
            full = real(path)
            writing = (mode and mode != "r" and mode != "rb") or (flags & 0o3)
            if inside(full) or (not writing and starts(full, readable)):
                return
            stop(f"file access outside sandbox: {path}")
        elif event in _FILE_EVENTS:
            path = args[0]
            if path is None and event in ("os.listdir", "os.scandir"):
                return  # the working directory
            if type_(path) is int_:
                stop(f"file access outside sandbox: {event} fd {path}")
            path = text(path)
            if not inside(real(path)):
                stop(f"file access outside sandbox: {event} {path}")
        elif event == "import":
            name = as_str(args[0])
            top = partition(name, ".")[0]
            if top in denied_modules or top not in loadable:
                stop(f"blocked import: {name}")
            if not (same(args[3], meta_path) and same(args[4], path_hooks)):
                stop("blocked: import hooks changed")
            pending_loads[0] = 1
        elif event in ("marshal.loads", "marshal.load"):
            # Only the import machinery, right after an allowed "import", may unmarshal code.
            if not pending_loads[0]:
                stop("blocked: unmarshalling code")
            pending_loads[0] = 0
        elif event == "exec":
            pending_loads[0] = 0
            # A module body from the stdlib runs through exec whatever loader route reached
            # it (`_gcd_import`, `importlib` internals, a hand-made spec): check its name.
            if type_(args[0]) is code_type:
                filename = as_str(args[0].co_filename)
                if starts(filename, stdlib + "/"):
                    rel = filename[len_(stdlib) + 1 :]
                    top = partition(partition(rel, "/")[0], ".")[0]
                    if top not in loadable and top != "lib-dynload":
                        stop(f"blocked import: {top}")
        elif starts(event, "socket."):
            stop("network disabled")
        elif starts(event, "ctypes."):
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
        elif event in _BLOCKED_EVENTS:
            stop(f"blocked: {event}")

    sys.addaudithook(hook)

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        # The user's `import` statement. It only gives a catchable, explained ImportError:
        # every other route to a loader still meets the hook's check when a module loads.
        name = as_str(name)
        top = partition(name, ".")[0]
        if level or (top not in allowed and top not in IMPLICIT_IMPORTS):
            raise ImportError(
                f"blocked import: {name} (allowed: {', '.join(sorted(allowed))})", name=name
            )
        # Resolved through this module's builtins at call time, so the closure holds no
        # import function (none would help: every function's __globals__ leads to one).
        return __import__(name, globals, locals, fromlist, level)

    return guarded_import


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
        if exc.errno == errno.ENOMEM:  # the run's memory cgroup refused a page (memfd, tmpfs)
            return "memory limit"
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

    out, err, exit_now = sys.stdout, sys.stderr, os._exit
    detail = _make_detail(req_fd)

    def finish(status, error=None, reason=None):
        try:
            type(out).flush(out)  # the class's method: the user may have set one on the object
            type(err).flush(err)
        except BaseException:  # noqa: BLE001 - a closed stream must not change the status
            pass
        if status != EXIT_OK:
            detail(error, reason)
        exit_now(status)  # no atexit or finalizer of the user's runs after this

    call_tool = _make_tool_caller(req_fd, rep_fd)
    user_builtins = dict(vars(builtins))
    if cfg["guard"]:
        user_builtins["__import__"] = _install_guards(cfg, detail)
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
        if e.code in (None, 0):
            finish(EXIT_OK)
        finish(EXIT_ERROR, f"SystemExit: {e.code}", "exit status")
    except BaseException as e:  # noqa: BLE001 - everything the code raises is its result
        g.clear()  # frees a memory balloon before formatting
        try:
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-8))
            finish(EXIT_ERROR, tb[-4000:], _classify(e, tb))
        except BaseException:  # noqa: BLE001 - e.g. memory still short: the status stands
            finish(EXIT_ERROR, None, f"error: {type(e).__name__}")
    finish(EXIT_OK)


main()

# SPDX-License-Identifier: GPL-2.0
"""The device-mapper ioctls of the suite's Dm devices (create, reload,
suspend, resume, remove, message, status, table, info), through
libdevmapper in the test's own process, with udev synchronised as
dmsetup does it (a cookie that udev's rules complete).

A dmsetup is a process: in a TCG guest its exec and dynamic linking cost
0.16-0.18 s, and a guest suite ran dmsetup over 1,100 times besides
asking a device's stats thousands of times (a profile of test_vdisk.py on
6.1: dmsetup was 25 % of the guest's CPU).  Through libdevmapper the same
ioctl costs a few milliseconds.  Tests that check what dmsetup itself
says, or that need its options, still run it.

Each call runs in a worker thread with a limit, like dmtest.sh: an ioctl
(or a udev wait) the kernel never lets finish fails its test with the
kernel's view of the waiters; it does not hang the suite (ctypes lets
other threads run while the call is in C)."""
import concurrent.futures
import ctypes
import errno
import os

DM_DEVICE_CREATE = 0
DM_DEVICE_RELOAD = 1
DM_DEVICE_REMOVE = 2
DM_DEVICE_SUSPEND = 4
DM_DEVICE_RESUME = 5
DM_DEVICE_INFO = 6
DM_DEVICE_STATUS = 10
DM_DEVICE_TABLE = 11
DM_DEVICE_TARGET_MSG = 17
_NAMES = {DM_DEVICE_CREATE: "create", DM_DEVICE_RELOAD: "reload", DM_DEVICE_REMOVE: "remove",
          DM_DEVICE_SUSPEND: "suspend", DM_DEVICE_RESUME: "resume", DM_DEVICE_INFO: "info",
          DM_DEVICE_STATUS: "status", DM_DEVICE_TABLE: "table", DM_DEVICE_TARGET_MSG: "message"}


class DmInfo(ctypes.Structure):
    _fields_ = [("exists", ctypes.c_int), ("suspended", ctypes.c_int),
                ("live_table", ctypes.c_int), ("inactive_table", ctypes.c_int),
                ("open_count", ctypes.c_int32), ("event_nr", ctypes.c_uint32),
                ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("read_only", ctypes.c_int), ("target_count", ctypes.c_int32),
                ("deferred_remove", ctypes.c_int), ("internal_suspend", ctypes.c_int)]


_lib = ctypes.CDLL("libdevmapper.so.1.02.1", use_errno=True)
_lib.dm_task_create.restype = ctypes.c_void_p
_lib.dm_task_create.argtypes = [ctypes.c_int]
_lib.dm_task_destroy.argtypes = [ctypes.c_void_p]
_lib.dm_task_set_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_lib.dm_task_set_sector.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
_lib.dm_task_set_message.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_lib.dm_task_no_open_count.argtypes = [ctypes.c_void_p]
_lib.dm_task_run.argtypes = [ctypes.c_void_p]
_lib.dm_task_get_errno.argtypes = [ctypes.c_void_p]
_lib.dm_task_get_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(DmInfo)]
_lib.dm_task_add_target.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64,
                                    ctypes.c_char_p, ctypes.c_char_p]
_lib.dm_task_set_cookie.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32),
                                    ctypes.c_uint16]
_lib.dm_task_retry_remove.argtypes = [ctypes.c_void_p]
_lib.dm_udev_wait.argtypes = [ctypes.c_uint32]
_lib.dm_task_get_message_response.restype = ctypes.c_char_p
_lib.dm_task_get_message_response.argtypes = [ctypes.c_void_p]
_lib.dm_get_next_target.restype = ctypes.c_void_p
_lib.dm_get_next_target.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.POINTER(ctypes.c_uint64),
                                    ctypes.POINTER(ctypes.c_uint64),
                                    ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(ctypes.c_char_p)]
# libdevmapper's own error lines ("device-mapper: message ioctl on ...
# failed") go to the pytest's stderr; the caller reports the errno itself.

# Several threads of a test ask at once (a reader's thread polls the stats
# while the test messages the device); a worker blocked in the kernel keeps
# its thread, the others go on.
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="libdm")


class DmError(OSError):
    """A device-mapper ioctl the kernel refused: .errno is its answer."""


# The tasks whose uevents udev must have handled before they return, as
# dmsetup does: the node is there (or gone) and the rules have run.
_UDEV_SYNC = (DM_DEVICE_CREATE, DM_DEVICE_RESUME, DM_DEVICE_REMOVE)


def _task(kind, name, setup=None):
    dmt = _lib.dm_task_create(kind)
    if not dmt:
        raise MemoryError("dm_task_create")
    cookie = ctypes.c_uint32(0)
    try:
        if not _lib.dm_task_set_name(dmt, name.encode()):
            raise DmError(errno.EINVAL, "not a device-mapper name", name)
        _lib.dm_task_no_open_count(dmt)
        if setup:
            setup(dmt)
        if kind in _UDEV_SYNC and not _lib.dm_task_set_cookie(dmt, ctypes.byref(cookie), 0):
            raise DmError(errno.EIO, "dm_task_set_cookie failed", name)
        ok = _lib.dm_task_run(dmt)
        err = 0 if ok else _lib.dm_task_get_errno(dmt) or ctypes.get_errno() or errno.EIO
        # waited for whatever the run did, as dmsetup does
        _lib.dm_udev_wait(cookie.value)
        if err:
            raise DmError(err, os.strerror(err), name)
        return _result(kind, name, dmt)
    finally:
        _lib.dm_task_destroy(dmt)


def _result(kind, name, dmt):
    if kind == DM_DEVICE_INFO:
        info = DmInfo()
        if not _lib.dm_task_get_info(dmt, ctypes.byref(info)):
            raise DmError(errno.EIO, "dm_task_get_info failed", name)
        return info
    if kind not in (DM_DEVICE_STATUS, DM_DEVICE_TABLE, DM_DEVICE_TARGET_MSG):
        return None
    if kind == DM_DEVICE_TARGET_MSG:
        resp = _lib.dm_task_get_message_response(dmt)
        return (resp or b"").decode()
    lines, nxt = [], None
    start, length = ctypes.c_uint64(), ctypes.c_uint64()
    ttype, params = ctypes.c_char_p(), ctypes.c_char_p()
    while True:
        nxt = _lib.dm_get_next_target(dmt, nxt, ctypes.byref(start), ctypes.byref(length),
                                      ctypes.byref(ttype), ctypes.byref(params))
        if ttype.value is not None:
            lines.append(f"{start.value} {length.value} {ttype.value.decode()} "
                         f"{(params.value or b'').decode()}".rstrip(" "))
        if not nxt:
            return "\n".join(lines)


def call(kind, name, setup=None, timeout=300, on_timeout=None):
    """Run one ioctl on device @name within @timeout seconds; past it,
    AssertionError with on_timeout()'s text (the kernel's view)."""
    fut = _pool.submit(_task, kind, name, setup)
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        why = on_timeout() if on_timeout else ""
        raise AssertionError(f"libdm {_NAMES[kind]} {name}: still running after {timeout} s\n"
                             f"{why}") from None


def message(name, words, **kw):
    """The target's answer to 'dmsetup message @name 0 @words' (DmError
    when refused)."""
    text = " ".join(words).encode()

    def setup(dmt):
        _lib.dm_task_set_sector(dmt, 0)
        _lib.dm_task_set_message(dmt, text)
    return call(DM_DEVICE_TARGET_MSG, name, setup, **kw)


def status(name, **kw):
    """'dmsetup status @name': a line per target."""
    return call(DM_DEVICE_STATUS, name, **kw)


def table(name, **kw):
    """'dmsetup table @name': a line per target."""
    return call(DM_DEVICE_TABLE, name, **kw)


def info(name, **kw):
    """The device's DmInfo; .exists is 0 for a name no device has."""
    return call(DM_DEVICE_INFO, name, **kw)


def _load(table):
    """A setup that adds @table's lines (dmsetup's table format)."""
    rows = []
    for line in table.strip().splitlines():
        words = line.split(None, 3)
        if len(words) < 3:
            raise DmError(errno.EINVAL, f"not a table line: {line!r}")
        rows.append((int(words[0]), int(words[1]), words[2].encode(),
                     (words[3] if len(words) > 3 else "").encode()))

    def setup(dmt):
        for start, size, ttype, params in rows:
            if not _lib.dm_task_add_target(dmt, start, size, ttype, params):
                raise MemoryError("dm_task_add_target")
    return setup


def create(name, table, **kw):
    """'dmsetup create @name' with @table: created, loaded, resumed, and
    udev done with it."""
    return call(DM_DEVICE_CREATE, name, _load(table), **kw)


def reload(name, table, **kw):
    """'dmsetup reload': @table into the inactive slot."""
    return call(DM_DEVICE_RELOAD, name, _load(table), **kw)


def suspend(name, **kw):
    return call(DM_DEVICE_SUSPEND, name, **kw)


def resume(name, **kw):
    """'dmsetup resume', udev done with its change event."""
    return call(DM_DEVICE_RESUME, name, **kw)


def remove(name, **kw):
    """'dmsetup remove --retry', udev done with its remove event."""
    return call(DM_DEVICE_REMOVE, name, _lib.dm_task_retry_remove, **kw)

# herd's gdb extension: lists a node's actors and prints the backtrace of a
# suspended actor from its saved context, on a live process or a core file.
#
#   (gdb) source tools/gdb/herd.py
#   (gdb) herd actors [--name S] [--status S] [--limit N]
#   (gdb) herd bt PID|NAME [full]
#   (gdb) herd select PID|NAME      # then bt, frame N, info locals ... ; frames from #1
#   (gdb) herd unselect
#   (gdb) herd workers
#
# How it finds the actors: herd::detail::g_node (an
# atomic node_state*) -> node_state::table -> process_table::slots_[0, fresh_),
# each slot an atomic process* (16-byte slots). Workers: herd::rt::(anonymous
# namespace)::g_runtime -> runtime_impl::workers (vector<unique_ptr<worker>>)
# and runtime_impl::threads (vector<std::thread>, thread i runs worker i).
# The globals are found by their ELF symbols; the structures' layouts come
# from the debug info (see README.md: RelWithDebInfo, or herd_gdb_types.cpp).
#
# How it unwinds a suspended actor: its fiber::ctx is Boost.Context's
# fcontext_t, the stack pointer inside jump_fcontext (x86_64 SysV) after it
# saved   [ctx+0x00] mxcsr, x87 cw   [ctx+0x08] r12   [ctx+0x10] r13
#         [ctx+0x18] r14   [ctx+0x20] r15   [ctx+0x28] rbx   [ctx+0x30] rbp
#         [ctx+0x38] return address;  the resumed caller's rsp is ctx+0x40.
# A Python frame unwinder claims frame #0 of the selected thread and reports
# those values as its caller's registers, so frame #1 onwards is the actor's
# own stack, unwound by gdb's DWARF/CFI unwinder as usual. No register of the
# inferior is written: it works the same on a live process and on a core.
# Every herd command puts gdb's frames back as they were when it returns.

import re
import struct

import gdb
import gdb.unwinder

# The first: an inline current_node() reads it from other files (issue 19);
# the second: builds before that, where it was node.cpp's own.
_NODE_SYMS = ("herd::detail::g_node", "herd::detail::(anonymous namespace)::g_node")
_RUNTIME_SYMS = ("herd::rt::(anonymous namespace)::g_runtime",)

_STATE_NAMES = {0: "waiting", 1: "runnable", 2: "runnable", 3: "dead"}

# fcontext layout (see the comment at the top).
_CTX_REGS = (("r12", 0x08), ("r13", 0x10), ("r14", 0x18), ("r15", 0x20),
             ("rbx", 0x28), ("rbp", 0x30), ("rip", 0x38))
_CTX_SP_AFTER = 0x40


class HerdError(Exception):
    pass


# ---------------------------------------------------------------- memory ---

def _inferior():
    inf = gdb.selected_inferior()
    if inf is None or not inf.threads():
        raise HerdError("no process or core file (attach, run or load a core first)")
    return inf


def _read(addr, n):
    try:
        return bytes(_inferior().read_memory(addr, n))
    except gdb.MemoryError as e:
        raise HerdError("cannot read %d bytes at 0x%x: %s" % (n, addr, e))


def _u64(addr):
    return struct.unpack("<Q", _read(addr, 8))[0]


def _u32(addr):
    return struct.unpack("<I", _read(addr, 4))[0]


# ----------------------------------------------------------------- types ---

def _type(name):
    try:
        t = gdb.lookup_type(name).strip_typedefs()
    except gdb.error:
        t = None
    if t is None or not t.fields():
        raise HerdError(
            "no debug info for %s: build with -g (RelWithDebInfo, Debug, a sanitizer build) "
            "or compile tools/gdb/herd_gdb_types.cpp with -g into the program (README.md)" % name)
    return t


def _find_field(t, name):
    """(byte offset, type) of member `name` of t, searching base classes."""
    t = t.strip_typedefs()
    for f in t.fields():
        if f.name == name and not f.is_base_class:
            return f.bitpos // 8, f.type.strip_typedefs()
    for f in t.fields():
        if f.is_base_class:
            r = _find_field(f.type, name)
            if r is not None:
                return f.bitpos // 8 + r[0], r[1]
    return None


def _offset(t, path):
    off = 0
    for part in path.split("."):
        r = _find_field(t, part)
        if r is None:
            raise HerdError("%s has no member %s (does herd.py match this herd?)" % (t, path))
        off += r[0]
        t = r[1]
    return off


class _Layout:
    """Byte offsets of everything the extension reads, from the debug info."""

    def __init__(self):
        proc = _type("herd::detail::process")
        fib = _type("herd::rt::fiber")
        self.proc_size = proc.sizeof
        self.fiber_base = _offset(proc, "state") - _offset(fib, "state")
        o = lambda p: _offset(proc, p)
        self.p_index = o("id.index")
        self.p_gen = o("id.generation")
        self.p_state = o("state")
        self.p_ctx = o("ctx")
        self.p_stack = o("stack")
        self.p_wheel = o("timer.wheel")
        self.p_reds = o("reductions")
        self.p_in = o("mbox.in_")
        self.p_taken = o("mbox.taken")
        self.p_uncounted = o("mbox.uncounted")
        self.p_deq = o("mbox.dequeued")
        self.p_name = o("name")
        self.p_trap = o("trap_exit")
        node = _type("herd::detail::node_state")
        self.n_table = _offset(node, "table")
        table = _type("herd::detail::process_table")
        self.t_cap = _offset(table, "cap_")
        self.t_slots = _offset(table, "slots_")
        self.t_fresh = _offset(table, "fresh_")
        self.slot_size = 16
        self.name_text = _offset(_type("herd::detail::interned_name"), "text")
        try:
            rt = _type("herd::rt::runtime_impl")
            self.r_workers = _offset(rt, "workers")
            self.r_threads = _offset(rt, "threads")
            w = _type("herd::rt::worker")
            self.w_id = _offset(w, "id")
            self.w_current = _offset(w, "side.current")
            self.w_running = _offset(w, "running")
            self.w_switches = _offset(w, "switches")
            self.w_steals = _offset(w, "steals")
            self.w_parks = _offset(w, "parks")
            self.have_workers = True
        except HerdError:
            self.have_workers = False


def _global_address(names):
    for n in names:
        try:
            v = gdb.parse_and_eval("&'%s'" % n)
            return int(v.cast(gdb.lookup_type("unsigned long")))
        except gdb.error:
            continue
    return None


# ----------------------------------------------------------------- model ---

class Actor:
    __slots__ = ("addr", "index", "gen", "state", "ctx", "stack", "timer", "reds",
                 "mailbox", "name", "worker", "trap_exit")

    @property
    def pid(self):
        return "<%d.%d>" % (self.index, self.gen)

    @property
    def status(self):
        if self.worker is not None:
            return "running on worker %d" % self.worker
        if self.state == 3:
            return "dead"
        if self.ctx == 0 and self.stack == 0:
            return "hibernated" if self.state == 0 else "runnable (waking from hibernation)"
        if self.ctx == 0:
            return "runnable (not started)"
        if self.stack == 0:
            s = _STATE_NAMES.get(self.state, "state %d" % self.state)
            return s + " (compact: frames copied out)"
        s = _STATE_NAMES.get(self.state, "state %d" % self.state)
        if s == "waiting" and self.timer:
            s = "waiting (timer armed)"
        return s


class Worker:
    __slots__ = ("addr", "id", "current", "running", "switches", "steals", "parks",
                 "pthread", "gdb_thread")


def _node_ptr():
    a = _global_address(_NODE_SYMS)
    if a is None:
        raise HerdError("no symbol herd::detail::g_node: "
                        "is this a herd program (not stripped)?")
    return _u64(a)


def _runtime_ptr():
    a = _global_address(_RUNTIME_SYMS)
    return _u64(a) if a is not None else 0


def _thread_pthreads():
    """{pthread_t: gdb.InferiorThread} for the inferior's threads."""
    out = {}
    inf = _inferior()
    orig = gdb.selected_thread()
    try:
        for t in inf.threads():
            h = None
            try:
                h = int.from_bytes(bytes(t.handle()), "little")
            except Exception:
                h = None
            if not h:
                # pthread_t is the TCB address, which is %fs's base on x86_64 glibc.
                try:
                    t.switch()
                    h = int(gdb.parse_and_eval("$fs_base"))
                except Exception:
                    h = None
            if h:
                out[h] = t
    finally:
        if orig is not None and orig.is_valid():
            orig.switch()
    return out


def _vector(addr, elem_size):
    """Element addresses of a libstdc++ std::vector at addr (start, finish, eos)."""
    start, finish = struct.unpack("<QQ", _read(addr, 16))
    if start == 0 or finish < start:
        return []
    n = (finish - start) // elem_size
    return [start + i * elem_size for i in range(min(n, 4096))]


def _workers(L):
    rt = _runtime_ptr()
    if not rt or not L.have_workers:
        return []
    threads = {}
    pts = _thread_pthreads()
    for i, a in enumerate(_vector(rt + L.r_threads, 8)):
        threads[i] = _u64(a)
    ws = []
    for i, a in enumerate(_vector(rt + L.r_workers, 8)):
        wp = _u64(a)
        if not wp:
            continue
        w = Worker()
        w.addr = wp
        w.id = _u32(wp + L.w_id)
        w.current = _u64(wp + L.w_current)
        w.running = _u64(wp + L.w_running)
        w.switches = _u64(wp + L.w_switches)
        w.steals = _u64(wp + L.w_steals)
        w.parks = _u64(wp + L.w_parks)
        w.pthread = threads.get(i, 0)
        w.gdb_thread = pts.get(w.pthread)
        ws.append(w)
    return ws


def _name_text(L, name_ptr, cache):
    if not name_ptr:
        return ""
    if name_ptr in cache:
        return cache[name_ptr]
    try:
        p, n = struct.unpack("<QQ", _read(name_ptr + L.name_text, 16))
        s = _read(p, min(n, 200)).decode("utf-8", "replace") if n else ""
        if n > 200:
            s += "..."
    except HerdError:
        s = "<unreadable name>"
    cache[name_ptr] = s
    return s


def _actors(L, workers):
    node = _node_ptr()
    if not node:
        raise HerdError("no herd node is running (g_node is null)")
    table = node + L.n_table
    cap = _u64(table + L.t_cap)
    slots = _u64(table + L.t_slots)
    fresh = _u32(table + L.t_fresh)
    n = min(fresh, cap)
    running = {}
    for w in workers:
        f = w.current or w.running
        if f:
            running[f - L.fiber_base] = w.id
    names = {}
    out = []
    chunk = 65536
    for base in range(0, n, chunk):
        m = min(chunk, n - base)
        raw = _read(slots + base * L.slot_size, m * L.slot_size)
        for i in range(m):
            (ptr,) = struct.unpack_from("<Q", raw, i * L.slot_size)
            if not ptr:
                continue
            try:
                b = _read(ptr, L.proc_size)
            except HerdError:
                continue
            a = Actor()
            a.addr = ptr
            a.index, a.gen = struct.unpack_from("<II", b, L.p_index)
            (a.state,) = struct.unpack_from("<I", b, L.p_state)
            (a.ctx,) = struct.unpack_from("<Q", b, L.p_ctx)
            (a.stack,) = struct.unpack_from("<Q", b, L.p_stack)
            (a.timer,) = struct.unpack_from("<Q", b, L.p_wheel)
            (a.reds,) = struct.unpack_from("<Q", b, L.p_reds)
            # mailbox.hpp: taken + the head word's count (top 16 bits) + uncounted - dequeued
            (head,) = struct.unpack_from("<Q", b, L.p_in)
            (taken,) = struct.unpack_from("<Q", b, L.p_taken)
            (uncounted,) = struct.unpack_from("<q", b, L.p_uncounted)
            (deq,) = struct.unpack_from("<Q", b, L.p_deq)
            enq = taken + (head >> 48) + uncounted
            a.mailbox = enq - deq if enq >= deq else 0
            a.trap_exit = b[L.p_trap] != 0
            a.name = _name_text(L, struct.unpack_from("<Q", b, L.p_name)[0], names)
            a.worker = running.get(ptr)
            out.append(a)
    return out


_PID_RE = re.compile(r"^<?(\d+)\.(\d+)>?$")


def _find_actor(L, workers, spec):
    m = _PID_RE.match(spec)
    for a in _actors(L, workers):
        if m and a.index == int(m.group(1)) and a.gen == int(m.group(2)):
            return a
        if not m and a.name == spec:
            return a
    raise HerdError("no live actor %s" % spec)


# -------------------------------------------------------------- unwinding ---

class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class _FiberUnwinder(gdb.unwinder.Unwinder):
    """While `ctx` is set: frame #0 of thread `lwp` unwinds into that context."""

    def __init__(self):
        super().__init__("herd-fiber")
        self.ctx = None
        self.regs = None
        self.thread = None
        self.pc = None
        self.sp = None

    def __call__(self, pf):
        if self.ctx is None:
            return None
        t = gdb.selected_thread()
        if t is None or t.ptid != self.thread:
            return None
        # The thread's innermost real frame (frame #0, or the frame holding
        # the functions inlined at #0): same pc and sp as the thread itself.
        pc = pf.read_register("rip")
        if int(pc) != self.pc or int(pf.read_register("rsp")) != self.sp:
            return None
        # The id's stack address is the fiber's: below its caller's CFA, so
        # gdb's "inner frame" check accepts the next frame whatever stack this one is on.
        ui = pf.create_unwind_info(_FrameId(gdb.Value(self.ctx).cast(pc.type.pointer()), pc))
        for name, val in self.regs:
            ui.add_saved_register(name, gdb.Value(val).cast(pf.read_register(name).type))
        return ui


_unwinder = _FiberUnwinder()
_unwinder_registered = False
_selected = None  # pid string of `herd select`


def _register_unwinder():
    global _unwinder_registered
    if not _unwinder_registered:
        gdb.unwinder.register_unwinder(None, _unwinder, replace=True)
        _unwinder_registered = True


def _ctx_regs(ctx):
    try:
        words = struct.unpack("<8Q", _read(ctx, 0x40))
    except HerdError:
        words = (0,) * 8
    if words[0x38 // 8] == 0:
        raise HerdError(
            "the saved context at 0x%x is zeros or unreadable: this core does not hold the "
            "actor's stack. gdb's gcore cannot read a stack chunk with madvise guard pages "
            "(Linux >= 6.13) and leaves it out; use a kernel core dump, or run the node "
            "with force_mprotect_guards before gcore (README.md)" % ctx)
    regs = [(name, words[off // 8]) for name, off in _CTX_REGS]
    regs.append(("rsp", ctx + _CTX_SP_AFTER))
    return regs


def _check_arch():
    arch = gdb.selected_inferior().architecture().name() if hasattr(gdb.Inferior, "architecture") else ""
    if arch and "x86-64" not in arch:
        raise HerdError("herd bt knows Boost.Context's x86_64 SysV layout only (this is %s)" % arch)


def _state():
    u = _unwinder
    return (u.ctx, u.regs, u.thread, u.pc, u.sp)


def _set_state(st):
    u = _unwinder
    u.ctx, u.regs, u.thread, u.pc, u.sp = st
    gdb.invalidate_cached_frames()


def _activate(a):
    """Makes the selected thread's innermost real frame unwind into a's saved
    context; returns the level of the actor's first frame."""
    _check_arch()
    t = gdb.selected_thread()
    if t is None:
        raise HerdError("no thread selected")
    _register_unwinder()
    _set_state((None, None, None, None, None))
    f = gdb.newest_frame()
    while f.type() == gdb.INLINE_FRAME and f.older() is not None:
        f = f.older()
    level = f.level() + 1
    pc = int(f.read_register("rip"))
    sp = int(f.read_register("rsp"))
    _set_state((a.ctx, _ctx_regs(a.ctx), t.ptid, pc, sp))
    return level


def _deactivate():
    _set_state((None, None, None, None, None))


def _why_no_stack(a, workers):
    if a.worker is not None:
        w = next((w for w in workers if w.id == a.worker), None)
        where = "its worker's thread"
        if w is not None and w.gdb_thread is not None:
            where = "gdb thread %d (LWP %d)" % (w.gdb_thread.num, w.gdb_thread.ptid[1])
        return ("actor %s is running on worker %d: its frames are on %s's own stack; "
                "look there: `thread %s` then `bt`" % (
                    a.pid, a.worker, where,
                    w.gdb_thread.num if w is not None and w.gdb_thread is not None else "N"))
    if a.state == 3:
        return "actor %s is dead (exiting): no saved context" % a.pid
    if a.ctx == 0 and a.stack == 0:
        return "actor %s is hibernated: it has no stack" % a.pid
    if a.ctx == 0:
        return "actor %s has not started yet: no frames" % a.pid
    if a.stack == 0:
        return ("actor %s is compact (spawn_options::compact_stack) and parked: its frames are "
                "copied out to the heap, not where its context points" % a.pid)
    return None


_FRAME_RE = re.compile(r"^#(\d+)(\s+)")


def _fiber_bt(text, first):
    """gdb's bt output without the thread's own frames (those below `first`),
    renumbered from #0; stops after the fiber's entry frame."""
    out = []
    keep = False
    done = False
    for line in text.splitlines():
        m = _FRAME_RE.match(line)
        if m:
            if done:
                break
            n = int(m.group(1))
            keep = n >= first
            if keep:
                width = len(m.group(1)) + len(m.group(2))
                num = str(n - first)
                line = "#" + num + " " * max(1, width - len(num)) + line[m.end():]
                if "fiber_entry" in line:
                    done = True
        elif line.startswith("Backtrace stopped") and done:
            break
        if keep:
            out.append(line)
    return "\n".join(out)


class _SavedFrame:
    def __enter__(self):
        self.thread = gdb.selected_thread()
        try:
            self.level = gdb.selected_frame().level()
        except gdb.error:
            self.level = None
        return self

    def __exit__(self, *exc):
        try:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
            if self.level is not None:
                gdb.execute("frame %d" % self.level, to_string=True)
        except gdb.error:
            pass
        return False


# --------------------------------------------------------------- commands ---

class HerdPrefix(gdb.Command):
    """herd: inspect a herd node's actors.

herd actors [--name S] [--status S] [--limit N]   list the actors
herd bt PID|NAME [full]                          backtrace of a suspended actor
herd select PID|NAME                             make bt, frame, up/down show that actor (frames #1...)
herd unselect                                    back to the thread's own frames
herd workers                                     the scheduler threads and what they run
A PID is <index.generation> (the brackets are optional); NAME a registered name."""

    def __init__(self):
        super().__init__("herd", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


def _command(fn):
    def invoke(self, arg, from_tty):
        try:
            fn(gdb.string_to_argv(arg))
        except HerdError as e:
            raise gdb.GdbError("herd: %s" % e)
    return invoke


class HerdActors(gdb.Command):
    """herd actors [--name S] [--status S] [--limit N]: the node's actors.

Columns: pid <index.generation>, registered name, status (running on worker N,
runnable, waiting, waiting (timer armed), hibernated, dead), mailbox length
(messages sent minus taken), reductions, control block address
(p *(herd::detail::process*)ADDR). --name and --status filter by substring."""

    def __init__(self):
        super().__init__("herd actors", gdb.COMMAND_STACK)

    @_command
    def invoke(argv):
        name = status = None
        limit = None
        i = 0
        while i < len(argv):
            if argv[i] in ("--name", "--status", "--limit") and i + 1 < len(argv):
                v = argv[i + 1]
                if argv[i] == "--name":
                    name = v
                elif argv[i] == "--status":
                    status = v
                else:
                    limit = int(v)
                i += 2
            else:
                raise HerdError("usage: herd actors [--name S] [--status S] [--limit N]")
        L = _Layout()
        with _SavedFrame():
            workers = _workers(L)
        acts = _actors(L, workers)
        shown = [a for a in acts
                 if (name is None or name in a.name) and (status is None or status in a.status)]
        total = len(shown)
        if limit is not None:
            shown = shown[:limit]
        rows = [("PID", "NAME", "STATUS", "MAILBOX", "REDUCTIONS", "BLOCK")]
        for a in shown:
            rows.append((a.pid, a.name or "-", a.status, str(a.mailbox), str(a.reds), "0x%x" % a.addr))
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            gdb.write("  ".join(r[c].ljust(widths[c]) if c < len(r) - 1 else r[c]
                                for c in range(len(r))).rstrip() + "\n")
        gdb.write("%d actor(s)%s\n" % (total, "" if len(shown) == total else ", %d shown" % len(shown)))


class HerdBt(gdb.Command):
    """herd bt PID|NAME [full]: the backtrace of a suspended actor.

Unwinds from the context the actor saved when it last switched out (its own
stack), numbered from #0 = the switch inside herd::rt::suspend. For an actor
running on a worker, says which thread to look at. `full` adds locals."""

    def __init__(self):
        super().__init__("herd bt", gdb.COMMAND_STACK)

    @_command
    def invoke(argv):
        if not argv or len(argv) > 2 or (len(argv) == 2 and argv[1] not in ("full", "-full")):
            raise HerdError("usage: herd bt PID|NAME [full]")
        L = _Layout()
        with _SavedFrame():
            workers = _workers(L)
        a = _find_actor(L, workers, argv[0])
        why = _why_no_stack(a, workers)
        if why:
            gdb.write(why + "\n")
            return
        header = "actor %s%s, %s, saved context 0x%x:\n" % (
            a.pid, " (%s)" % a.name if a.name else "", a.status, a.ctx)
        prev = _state()
        with _SavedFrame():
            try:
                first = _activate(a)
                text = gdb.execute("bt -full" if len(argv) == 2 else "bt", to_string=True)
            finally:
                _set_state(prev)
        gdb.write(header + _fiber_bt(text, first) + "\n")


class HerdSelect(gdb.Command):
    """herd select PID|NAME: gdb's frame commands show that actor.

Until `herd unselect`, frame #0 of the selected thread unwinds into the actor's
saved context: its frames are #1 and up (bt, frame 1, up, info locals, finish
is NOT safe on a live process). Read-only: no register is written."""

    def __init__(self):
        super().__init__("herd select", gdb.COMMAND_STACK)

    @_command
    def invoke(argv):
        global _selected
        if len(argv) != 1:
            raise HerdError("usage: herd select PID|NAME")
        L = _Layout()
        with _SavedFrame():
            workers = _workers(L)
        a = _find_actor(L, workers, argv[0])
        why = _why_no_stack(a, workers)
        if why:
            raise HerdError(why)
        first = _activate(a)
        _selected = a.pid
        gdb.write("actor %s selected on thread %d: its frames are #%d and up; "
                  "`herd unselect` to undo\n" % (a.pid, gdb.selected_thread().num, first))
        gdb.execute("frame %d" % first)


class HerdUnselect(gdb.Command):
    """herd unselect: undo herd select."""

    def __init__(self):
        super().__init__("herd unselect", gdb.COMMAND_STACK)

    @_command
    def invoke(argv):
        global _selected
        _deactivate()
        _selected = None
        gdb.write("back to the thread's own frames\n")


class HerdWorkers(gdb.Command):
    """herd workers: each scheduler thread, its gdb thread and the actor it runs."""

    def __init__(self):
        super().__init__("herd workers", gdb.COMMAND_STACK)

    @_command
    def invoke(argv):
        L = _Layout()
        if not L.have_workers:
            raise HerdError("no debug info for herd::rt::worker / runtime_impl")
        with _SavedFrame():
            workers = _workers(L)
        if not workers:
            raise HerdError("no herd runtime is running (g_runtime is null)")
        acts = {}
        try:
            acts = {a.addr: a for a in _actors(L, workers)}
        except HerdError:
            pass
        rows = [("WORKER", "GDB THREAD", "LWP", "RUNNING", "SWITCHES", "STEALS", "PARKS")]
        for w in workers:
            f = w.current or w.running
            cur = "-"
            if f:
                a = acts.get(f - L.fiber_base)
                cur = (a.pid + (" " + a.name if a.name else "")) if a else "fiber 0x%x" % f
            t = w.gdb_thread
            rows.append((str(w.id), str(t.num) if t else "?", str(t.ptid[1]) if t else "?", cur,
                         str(w.switches), str(w.steals), str(w.parks)))
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            gdb.write("  ".join(r[c].ljust(widths[c]) for c in range(len(r))).rstrip() + "\n")


HerdPrefix()
HerdActors()
HerdBt()
HerdSelect()
HerdUnselect()
HerdWorkers()

/* herd's context switch on x86-64 (System V), called as Boost.Context's
   jump_fcontext is: transfer_t herd_jump_fcontext(fcontext_t to, void* data).
   It keeps fcontext's frame exactly -- 0x38 bytes below the return address,
   the six callee-saved registers at 0x8..0x30 -- so contexts made by
   make_fcontext, and frames `herd bt` (tools/gdb) walks, are the same.

   What it leaves out is fcontext's save and reload of MXCSR and the x87
   control word (the frame's first 8 bytes stay unused): on this machine they
   were 2.3 of the 5.4 ns a switch cost (docs/handoff.md, session 21). The
   floating-point environment is therefore the worker thread's, not each
   fiber's: code that changes the rounding mode or the exception masks must
   put them back before it can block (docs/erlang-differences.md).

   How it goes on: with `ret` when the other side resumes at the very call
   site this side is leaving from, with `jmp` otherwise. Two fibers handing
   off through receive -> park -> suspend both sleep in the same call, and
   the CPU's return stack holds this side's return addresses, which are
   the other side's too: `ret` consumes the top one as the right prediction
   and every return up the shared chain is predicted after it. `jmp` left
   that entry on the return stack, so each return after the switch was
   predicted one frame off and missed (tools/switchbench, nested: 29 -> 15 ns
   a switch; docs/handoff.md, session 22). A fresh context (make_fcontext's
   trampoline) or a switch between different sites (a fiber and the worker
   loop) takes the `jmp`, which the indirect predictor handles. (A `ret` to
   another stack would fault under CET shadow stacks; this file carries no
   SHSTK property, so the linker leaves them off for the whole binary.) */
    .text
    .globl  herd_jump_fcontext
    .type   herd_jump_fcontext, @function
    .align  16
herd_jump_fcontext:
    leaq    -0x38(%rsp), %rsp      /* the return address stays at 0x38 */
    movq    %r12, 0x8(%rsp)
    movq    %r13, 0x10(%rsp)
    movq    %r14, 0x18(%rsp)
    movq    %r15, 0x20(%rsp)
    movq    %rbx, 0x28(%rsp)
    movq    %rbp, 0x30(%rsp)
    movq    0x38(%rsp), %rcx       /* where this side resumes */
    movq    %rsp, %rax             /* this context, handed to the other side */
    movq    %rdi, %rsp             /* the other side's frame */
    movq    0x38(%rsp), %r8        /* where it resumes */
    movq    0x8(%rsp), %r12
    movq    0x10(%rsp), %r13
    movq    0x18(%rsp), %r14
    movq    0x20(%rsp), %r15
    movq    0x28(%rsp), %rbx
    movq    0x30(%rsp), %rbp
    leaq    0x38(%rsp), %rsp       /* drop the frame: the return address is on top */
    movq    %rsi, %rdx             /* transfer_t{fctx: rax, data: rdx} as a return value, */
    movq    %rax, %rdi             /* and as the first argument of a fresh context's entry */
    cmpq    %rcx, %r8
    jne     1f
    ret                            /* the same call site: the return stack predicts it */
1:  leaq    0x8(%rsp), %rsp
    jmp     *%r8
    .size   herd_jump_fcontext, .-herd_jump_fcontext

    .section .note.GNU-stack, "", %progbits

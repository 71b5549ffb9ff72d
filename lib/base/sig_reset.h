/*
 * sig_reset: every signal back to its default disposition and an empty
 * signal mask, for a child about to exec. Ignored dispositions and the
 * mask survive exec, so a program started by a parent that ignores
 * SIGPIPE or blocks its shutdown signals would inherit them.
 *
 * Contract: async-signal-safe (sigaction, sigprocmask only), so it may
 * run between fork and exec of a multi-threaded process. SIGKILL and
 * SIGSTOP refuse silently; NSIG covers the real-time signals.
 */
#ifndef KILN_SIG_RESET_H
#define KILN_SIG_RESET_H

void sig_reset_all(void);

#endif

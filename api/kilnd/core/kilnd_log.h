/*
 * kilnd_log: kilnd's log, one line on stderr per call, prefixed "kilnd: "
 * (supervisors such as systemd stamp and keep stderr).
 *
 * Contract: the line is cut to 2 KiB and scrubbed for a terminal
 * (text_clean's term rule), so a newline or escape sequence quoted from a
 * client or a guest cannot forge a line or reach a terminal; it goes out
 * in one write(2), so lines from different threads never interleave. No
 * state, callable from any thread; a failed write is dropped (there is
 * nowhere left to report it).
 */
#ifndef KILN_KILND_LOG_H
#define KILN_KILND_LOG_H

void kilnd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

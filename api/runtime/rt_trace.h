/*
 * rt_trace: where a container's start goes. With KILN_RUNTIME_TRACE=FILE
 * in its environment, kiln-runtime (each command and the shim) appends
 * one line per step to FILE:
 *
 *   1764430000123456 4242 shim: agent ready
 *
 * wall-clock microseconds (CLOCK_REALTIME, comparable with `date +%s%N`
 * in the script that started the engine), the pid, the step. bench/oci
 * sets it for its traced run and prints the steps' deltas.
 *
 * Contract: never fails a command (a file it cannot open is no trace);
 * without the variable, one getenv per step and nothing else. A line is
 * one write(2) on an O_APPEND descriptor, so the commands and the shim
 * interleave whole lines.
 */
#ifndef KILN_RT_TRACE_H
#define KILN_RT_TRACE_H

#define RT_TRACE_ENV "KILN_RUNTIME_TRACE"

void rt_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/*
 * rt_log: the lines kiln-runtime writes to --log, as runc writes them
 * (logrus): engines read them back. containerd's runc shim and Podman
 * pass --log-format json and report the last "error" line's "msg" as the
 * runtime's error (containerd getLastRuntimeError), so a refusal must be
 * one line whose msg says what and why.
 *
 *   json: {"level":"error","msg":"container not running","time":"2026-11-29T10:15:09Z"}
 *   text: time="2026-11-29T10:15:09Z" level=error msg="container not running"
 *
 * Contract: pure formatting, no I/O. The message is untrusted text (it
 * quotes argv and config.json) and is cleaned first (lib/base/text_clean,
 * the term rule): one line, no terminal controls, valid UTF-8, at most
 * ERR_MSG_MAX - 1 bytes.
 */
#ifndef KILN_RT_LOG_H
#define KILN_RT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "api/runtime/rt_cli.h"

/* A line's bound: a cleaned message with every byte escaped twice, and
 * the fields around it. */
#define RT_LOG_LINE_MAX 4096
#define RT_LOG_TIME_MAX 40

enum rt_log_level { RT_LOG_DEBUG, RT_LOG_INFO, RT_LOG_WARNING, RT_LOG_ERROR };

/* logrus's name of a level: "debug", "info", "warning", "error". */
const char *rt_log_level_name(enum rt_log_level l);

/*
 * ts (UTC) as RFC 3339 into buf[RT_LOG_TIME_MAX]: "2026-11-29T10:15:09Z",
 * or with nanos Go's RFC3339Nano ("...:09.12Z": trailing zeros of the
 * fraction dropped, no fraction when it is 0), which `state` reports as
 * "created".
 */
void rt_log_time(char *buf, const struct timespec *ts, bool nanos);

/*
 * One line, '\n'-terminated, into out[cap]: the bytes written, or
 * -ENOSPC when cap is under RT_LOG_LINE_MAX (then nothing is written).
 * time is rt_log_time's text.
 */
int rt_log_line(char *out, size_t cap, enum rt_log_format f, enum rt_log_level l, const char *time,
		const char *msg);

#endif

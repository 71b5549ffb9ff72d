/* runc's --log lines; see rt_log.h. */
#include "api/runtime/rt_log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/err.h"
#include "lib/base/text_clean.h"

static const char *const level_names[] = {
	[RT_LOG_DEBUG] = "debug",
	[RT_LOG_INFO] = "info",
	[RT_LOG_WARNING] = "warning",
	[RT_LOG_ERROR] = "error",
};

const char *rt_log_level_name(enum rt_log_level l)
{
	if ((unsigned)l >= sizeof(level_names) / sizeof(level_names[0]))
		return "error";
	return level_names[l];
}

void rt_log_time(char *buf, const struct timespec *ts, bool nanos)
{
	struct tm tm;
	time_t t = ts->tv_sec;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, RT_LOG_TIME_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
	if (nanos && ts->tv_nsec > 0 && ts->tv_nsec < 1000000000) {
		long ns = ts->tv_nsec;
		int digits = 9;

		while (ns % 10 == 0) {
			ns /= 10;
			digits--;
		}
		n += (size_t)snprintf(buf + n, RT_LOG_TIME_MAX - n, ".%0*ld", digits, ns);
	}
	snprintf(buf + n, RT_LOG_TIME_MAX - n, "Z");
}

/* s with " and \ escaped, as Go's %q writes a cleaned string (no
 * controls are left to escape). Returns the bytes written. */
static size_t quote(char *out, const char *s)
{
	size_t k = 0;

	out[k++] = '"';
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			out[k++] = '\\';
		out[k++] = *s;
	}
	out[k++] = '"';
	out[k] = '\0';
	return k;
}

/* logrus quotes a text value unless every byte is a letter, a digit or
 * one of -._/@^+ (and it is not empty). */
static bool needs_quote(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("-._/@^+", c)))
			return true;
	}
	return false;
}

/* The text line: time="..." level=L msg=... */
static size_t text_line(char *out, const char *lvl, const char *time, const char *msg)
{
	size_t k = (size_t)sprintf(out, "time=");

	k += quote(out + k, time);
	k += (size_t)sprintf(out + k, " level=%s msg=", lvl);
	if (needs_quote(msg))
		k += quote(out + k, msg);
	else
		k += (size_t)sprintf(out + k, "%s", msg);
	out[k++] = '\n';
	out[k] = '\0';
	return k;
}

/* The json line: logrus's JSONFormatter sorts the keys. */
static size_t json_line(char *out, const char *lvl, const char *time, const char *msg)
{
	size_t k = (size_t)sprintf(out, "{\"level\":\"%s\",\"msg\":", lvl);

	k += quote(out + k, msg);
	k += (size_t)sprintf(out + k, ",\"time\":");
	k += quote(out + k, time);
	k += (size_t)sprintf(out + k, "}\n");
	return k;
}

int rt_log_line(char *out, size_t cap, enum rt_log_format f, enum rt_log_level l, const char *time,
		const char *msg)
{
	char m[ERR_MSG_MAX], t[RT_LOG_TIME_MAX];

	if (cap < RT_LOG_LINE_MAX)
		return -ENOSPC;
	/* Both are cut so that the line fits in RT_LOG_LINE_MAX: a message
	 * of 1023 bytes, each one a '"' escaped to two, is 2048. */
	text_clean_term(m, sizeof(m), msg, strlen(msg));
	text_clean_term(t, sizeof(t), time, strlen(time));
	if (f == RT_LOG_JSON)
		return (int)json_line(out, rt_log_level_name(l), t, m);
	return (int)text_line(out, rt_log_level_name(l), t, m);
}

/*
 * attempt: what both of the escape suite's attackers (kiln-escape,
 * kiln-escape-importer) share: an attempt's verdict with its one line,
 * and a Unix socket connect by path or abstract name.
 */
#ifndef KILN_ESCAPE_ATTEMPT_H
#define KILN_ESCAPE_ATTEMPT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MSG_MAX 400

enum { BLOCKED = 0, ESCAPED = 1 };

/* The verdict, with msg (MSG_MAX bytes) saying how it was blocked or what it reached. */
static inline int say(char *msg, int verdict, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int say(char *msg, int verdict, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_MAX, fmt, ap);
	va_end(ap);
	return verdict;
}

/* A connected Unix stream socket to path `name` (abstract: @name), or -1. */
static inline int connect_unix(const char *name, int abstract)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	socklen_t len;
	int s;

	if (n + (size_t)abstract >= sizeof(a.sun_path) ||
	    (s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	memcpy(a.sun_path + abstract, name, n);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)abstract + n);
	if (connect(s, (struct sockaddr *)&a, len) < 0) {
		close(s);
		return -1;
	}
	return s;
}

#endif

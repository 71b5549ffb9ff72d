#include "lib/base/err.h"

#include <stdarg.h>
#include <stdio.h>

int err_set(struct err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

/* A container's end as its shim's end; see rt_exit.h. */
#include "api/runtime/rt_exit.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/num_parse.h"

/* Default action "ignore" or "stop": raising it would not end the shim. */
static bool survivable(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGSTOP || sig == SIGTSTP ||
		sig == SIGTTIN || sig == SIGTTOU || sig == SIGURG || sig == SIGWINCH;
}

void rt_exit_end(const struct rt_exit *x, struct rt_end *end)
{
	if (x->vm_crashed)
		*end = (struct rt_end){ RT_END_EXIT, RT_EXIT_VM_CRASHED };
	else if (x->signo > 0 && x->signo <= 64 && !survivable(x->signo))
		*end = (struct rt_end){ RT_END_SIGNAL, x->signo };
	else if (x->signo > 0 && x->signo <= 64)
		*end = (struct rt_end){ RT_END_EXIT, 128 + x->signo };
	else if (x->exit_code >= 0 && x->exit_code <= 255)
		*end = (struct rt_end){ RT_END_EXIT, x->exit_code };
	else
		*end = (struct rt_end){ RT_END_EXIT, RT_EXIT_VM_CRASHED }; /* nothing known */
}

size_t rt_exit_encode(const struct rt_exit *x, char *buf)
{
	return (size_t)snprintf(buf, RT_EXIT_LINE_MAX, "exit_code=%d signal=%d vm_crashed=%d\n",
				x->exit_code, x->signo, x->vm_crashed ? 1 : 0);
}

/* "name=N" ending at a space or the line's end, N in min..max (-1 is
 * written as such for exit_code). */
static const char *field(const char *p, const char *end, const char *name, long min, long max,
			 long *out)
{
	size_t len = strlen(name), k;
	uint64_t v;
	bool neg;

	if ((size_t)(end - p) < len + 2 || memcmp(p, name, len) != 0 || p[len] != '=')
		return NULL;
	p += len + 1;
	neg = *p == '-';
	p += neg;
	for (k = 0; p + k < end && p[k] != ' ' && p[k] != '\n'; k++)
		;
	/* One spelling per value (no leading zero): the file reads back as
	 * the shim wrote it. */
	if ((k > 1 && p[0] == '0') ||
	    num_parse_u64_n(p, k, 10, 0, (uint64_t)(neg ? -min : max), &v) < 0)
		return NULL;
	*out = neg ? -(long)v : (long)v;
	if (*out < min || *out > max || (neg && v == 0))
		return NULL;
	return p + k;
}

int rt_exit_decode(const char *buf, size_t n, struct rt_exit *x, struct err *e)
{
	const char *p = buf, *end = buf + n;
	long code, sig, crashed;

	if (n == 0 || n > RT_EXIT_LINE_MAX || buf[n - 1] != '\n' || memchr(buf, '\n', n) != end - 1)
		goto bad;
	if (!(p = field(p, end, "exit_code", -1, 255, &code)) || *p++ != ' ' ||
	    !(p = field(p, end, "signal", 0, 64, &sig)) || *p++ != ' ' ||
	    !(p = field(p, end, "vm_crashed", 0, 1, &crashed)) || p != end - 1)
		goto bad;
	if ((code < 0) == (sig == 0) && !crashed)
		goto bad; /* exactly one of the two, unless the VM crashed */
	*x = (struct rt_exit){ (int)code, (int)sig, crashed == 1 };
	return 0;
bad:
	return err_set(e, EINVAL,
		       "the exit file is not one line \"exit_code=N signal=S vm_crashed=0|1\"");
}

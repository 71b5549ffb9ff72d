/* The egress CA into the guest: see sandbox_trust.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/net/sandbox_trust.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/base/fd_io.h"
#include "lib/base/open_beneath.h"

int sandbox_trust_read(const struct sandbox *sb, char **pem, struct api_err *e)
{
	struct err be;
	struct stat st;
	char *buf;
	ssize_t n;
	int dfd, fd;

	*pem = NULL;
	/* The sandbox directory is root's: only what is beneath it can be
	 * the proxy's doing. */
	dfd = open(sb->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		api_err_set(e, API_E_IO_ERROR, "sandbox %s: cannot open its directory %s: %s",
			    sb->rec.id, sb->dir, strerror(errno));
		return -1;
	}
	fd = open_beneath(dfd, SANDBOX_TRUST_CA_REL, OPEN_BENEATH_FILE, &st, &be);
	close(dfd);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0) {
		api_err_set(e, API_E_IO_ERROR,
			    "sandbox %s: its egress CA %s/%s: %s; remove it (the proxy's setup writes it again)",
			    sb->rec.id, sb->dir, SANDBOX_TRUST_CA_REL, be.msg);
		return -1;
	}
	buf = st.st_size <= SANDBOX_TRUST_CA_MAX ? malloc(SANDBOX_TRUST_CA_MAX + 2) : NULL;
	/* One byte more than the limit: a file that grew since fstat is seen. */
	n = buf ? fd_io_read_full(fd, buf, SANDBOX_TRUST_CA_MAX + 1) : -EFBIG;
	close(fd);
	if (n < 0 || n > SANDBOX_TRUST_CA_MAX) {
		free(buf);
		api_err_set(e, API_E_IO_ERROR, "sandbox %s: its egress CA %s/%s: %s", sb->rec.id,
			    sb->dir, SANDBOX_TRUST_CA_REL,
			    n == -EFBIG || n > SANDBOX_TRUST_CA_MAX
				    ? "larger than one PEM certificate (8192 bytes)"
				    : strerror((int)-n));
		return -1;
	}
	buf[n] = '\0';
	*pem = buf;
	return 1;
}

void sandbox_trust_fail(const struct sandbox *sb, const kiln_agent *a, const char *what,
			struct api_err *e)
{
	char msg[ERR_MSG_MAX];

	/* The agent's message names the field: say whose, and which file. */
	api_err_from_agent(e, a, what);
	snprintf(msg, sizeof(msg), "%s", e->msg);
	api_err_set(e, e->code, "sandbox %s: %s (%s/%s): %s", sb->rec.id, what, sb->dir,
		    SANDBOX_TRUST_CA_REL, msg);
}

int sandbox_trust_push(struct sandbox *sb, struct api_err *e)
{
	kiln_agent *a;
	char *pem;
	int r = sandbox_trust_read(sb, &pem, e);

	if (r < 0)
		return -1;
	if (kiln_agent_new(sb->vsock, &a) < 0) {
		free(pem);
		api_err_set(e, API_E_INTERNAL,
			    "sandbox %s: installing its egress CA: out of memory", sb->rec.id);
		return -1;
	}
	r = kiln_agent_trust_ca(a, pem ? pem : "");
	if (r)
		sandbox_trust_fail(sb, a,
				   pem ? "installing its egress CA" : "removing its egress CA", e);
	kiln_agent_free(a);
	free(pem);
	return r ? -1 : 0;
}

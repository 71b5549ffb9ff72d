/* kiln-vmm's control socket, the client side; see vmm_control.h. */
#include "api/kilnd/supervision/vmm_control.h"
#include "vmm/control/control_client.h"

#include <errno.h>
#include <string.h>

int vmm_control_run(const char *sock_path, const struct control_cmd *cmd, int timeout_ms,
		    struct control_reply *out, struct api_err *e)
{
	struct err why = { { 0 } };
	int r = control_client_run(sock_path, cmd, timeout_ms, out, &why);

	if (!r)
		return 0;
	api_err_set(e,
		    r == -EINVAL              ? API_E_BAD_FIELD
			    : r == -ETIMEDOUT ? API_E_TIMEOUT
					      : API_E_INTERNAL,
		    "%s", why.msg);
	return -1;
}
int vmm_control_call(const char *sock_path, enum control_op op, const char *dir, bool compress,
		     int timeout_ms, struct control_reply *out, struct api_err *e)
{
	struct control_cmd cmd = { .op = op, .compress = compress, .dir = dir };

	return vmm_control_run(sock_path, &cmd, timeout_ms, out, e);
}

int vmm_control_firewall(const char *sock_path, const char *rules, int timeout_ms, size_t *cut,
			 json_t **obj, struct api_err *e)
{
	struct control_cmd cmd = { .op = rules ? CTL_FIREWALL_SET : CTL_FIREWALL_GET,
				   .json = rules };
	struct control_reply rep;

	if (cut)
		*cut = 0;
	if (obj)
		*obj = NULL;
	if (vmm_control_run(sock_path, &cmd, timeout_ms, &rep, e))
		return -1;
	if (cut)
		*cut = rep.cut;
	if (obj)
		*obj = rep.firewall;
	else
		json_decref(rep.firewall);
	return 0;
}

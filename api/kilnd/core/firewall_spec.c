/* Networks and firewall rule sets of the API; see firewall_spec.h. */
#include "api/kilnd/core/firewall_spec.h"

#include <stdlib.h>
#include <string.h>

#include "lib/netrules/net_rules.h"
#include "lib/base/json_text.h"

int firewall_network_parse(const char *s, enum sandbox_network *out)
{
	if (strcmp(s, "none") == 0)
		*out = SANDBOX_NET_NONE;
	else if (strcmp(s, "passt") == 0)
		*out = SANDBOX_NET_PASST;
	else
		return -1;
	return 0;
}

const char *firewall_network_name(enum sandbox_network n)
{
	return n == SANDBOX_NET_PASST ? "passt" : "none";
}

static enum api_code code_of(enum net_rules_ecode c)
{
	switch (c) {
	case NET_RULES_E_BAD_JSON:
		return API_E_BAD_JSON;
	case NET_RULES_E_UNKNOWN_FIELD:
		return API_E_UNKNOWN_FIELD;
	case NET_RULES_E_MISSING_FIELD:
		return API_E_MISSING_FIELD;
	case NET_RULES_E_BAD_FIELD:
		return API_E_BAD_FIELD;
	default:
		return API_E_INTERNAL;
	}
}

int firewall_rules_canon(const json_t *rules, json_t **out, struct api_err *e)
{
	struct net_rules_err re = { 0 };
	struct net_rules *nr = NULL;
	json_t *in;
	int r;

	*out = NULL;
	if (rules && !json_is_object(rules)) {
		api_err_set(e, API_E_BAD_FIELD, "firewall: the rule set must be a JSON object");
		return -1;
	}
	in = rules ? json_copy((json_t *)rules) : json_object();
	if (!in) {
		api_err_set(e, API_E_INTERNAL, "firewall: out of memory");
		return -1;
	}
	if (!json_object_get(in, "dns") &&
	    json_object_set_new(in, "dns", json_pack("[s]", FW_PASST_DNS))) {
		json_decref(in);
		api_err_set(e, API_E_INTERNAL, "firewall: out of memory");
		return -1;
	}
	r = net_rules_parse(in, &nr, &re);
	json_decref(in);
	if (r) {
		api_err_set(e, code_of(re.code), "%s",
			    re.msg[0] ? re.msg : "firewall: invalid rule set");
		return -1;
	}
	*out = net_rules_to_json(nr);
	net_rules_free(nr);
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "firewall: out of memory");
		return -1;
	}
	return 0;
}

char *firewall_rules_line(const json_t *canon, struct api_err *e)
{
	char *s = json_text(canon, JSON_COMPACT);

	if (!s) {
		api_err_set(e, API_E_INTERNAL, "firewall: out of memory");
		return NULL;
	}
	/* JSON_COMPACT escapes control characters: no newline can end the line early. */
	if (strlen(s) > FW_RULES_TEXT_MAX) {
		api_err_set(e, API_E_TOO_LARGE, "firewall: the rule set is %zu bytes, more than %d",
			    strlen(s), FW_RULES_TEXT_MAX);
		free(s);
		return NULL;
	}
	return s;
}

json_t *firewall_view(enum sandbox_network net, const json_t *rules, const json_t *vmm)
{
	json_t *live = vmm ? json_object_get(vmm, "rules") : NULL;
	json_t *ctr = vmm ? json_object_get(vmm, "counters") : NULL;

	if (!live)
		live = (json_t *)rules;
	return json_pack("{s:s, s:b, s:O?, s:O?}", "network", firewall_network_name(net), "running",
			 vmm != NULL, "rules", live, "counters", ctr);
}

/* Sum packets of every reason in one direction, split pass_* / drop_*. */
static void sum_dir(const json_t *dir, struct fw_totals *t)
{
	const char *reason;
	json_t *v;

	if (!json_is_object(dir))
		return;
	json_object_foreach((json_t *)dir, reason, v)
	{
		json_t *p = json_object_get(v, "packets");
		uint64_t n;

		if (!json_is_integer(p) || json_integer_value(p) < 0)
			continue;
		n = (uint64_t)json_integer_value(p);
		if (strncmp(reason, "pass_", 5) == 0)
			t->pass_packets += n;
		else if (strncmp(reason, "drop_", 5) == 0)
			t->drop_packets += n;
	}
}

void firewall_totals_add(const json_t *vmm, struct fw_totals *t)
{
	json_t *c = json_object_get(vmm, "counters"), *cut;

	if (!json_is_object(c))
		return;
	sum_dir(json_object_get(c, "egress"), t);
	sum_dir(json_object_get(c, "ingress"), t);
	cut = json_object_get(c, "flows_cut");
	if (json_is_integer(cut) && json_integer_value(cut) > 0)
		t->flows_cut += (uint64_t)json_integer_value(cut);
}

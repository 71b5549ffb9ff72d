/*
 * firewall_spec: a sandbox's network and packet-filter rules as the API
 * takes and shows them (docs/api.md, "Networking and firewall").
 *
 *   network  "none" (no network device: the default) or "passt" (kiln-vmm
 *            --net passt: user-mode NAT, the guest is 10.0.2.15/24 behind
 *            10.0.2.2, its resolver 10.0.2.3).
 *   firewall a rule set of lib/netrules/net_rules.h, default deny.
 *
 * Contract:
 *  - Pure (jansson and lib/netrules/net_rules.c). Rules are validated by
 *    net_rules_parse() and its message is the API's, word for word (e.g.
 *    `firewall: allow[2].ports "80-": not a port or a range LO-HI of
 *    1..65535`); the code maps to bad_json/unknown_field/missing_field/
 *    bad_field.
 *  - A rule set without "dns" gets the passt resolver ("dns":["10.0.2.3"]),
 *    so {"outbound_internet":true} is enough for a guest to resolve names;
 *    "dns":[] keeps DNS shut. No rule set at all is {} plus that resolver:
 *    DNS only, every other flow denied.
 *  - The canonical form (net_rules_to_json) is what kilnd stores in
 *    <sandbox dir>/firewall.json and hands to kiln-vmm.
 */
#ifndef KILN_FIREWALL_SPEC_H
#define KILN_FIREWALL_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"

/* kiln-vmm's --net passt defaults (docs/kiln-vmm.md, `--net passt`). */
#define FW_PASST_GUEST_IP "10.0.2.15/24"
#define FW_PASST_GATEWAY "10.0.2.2"
#define FW_PASST_DNS "10.0.2.3"
/* net_rules.h's NET_RULES_TEXT_MAX: the longest rule set kiln-vmm takes on one line. */
#define FW_RULES_TEXT_MAX (256 * 1024)

enum sandbox_network { SANDBOX_NET_NONE, SANDBOX_NET_PASST };

/* "none" / "passt" → *out. 0, or -1 for another word. */
int firewall_network_parse(const char *s, enum sandbox_network *out);
const char *firewall_network_name(enum sandbox_network n);

/*
 * Validate a rule set (NULL: the default) and return its canonical form
 * with the default resolver added when "dns" is absent (*out: a new
 * reference). 0, or -1 with e (net_rules' message).
 */
int firewall_rules_canon(const json_t *rules, json_t **out, struct api_err *e);

/* The canonical rules as one line for kiln-vmm (malloc'd; NULL on OOM or
 * when longer than FW_RULES_TEXT_MAX, with e). */
char *firewall_rules_line(const json_t *canon, struct api_err *e);

/*
 * GET .../firewall's object: {"network", "running", "rules", "counters"}.
 * rules is the stored rule set; vmm (kiln-vmm's firewall-get reply, or
 * NULL when no VMM answered) supplies the live rules and counters
 * (counters null without one). New reference, NULL on OOM.
 */
json_t *firewall_view(enum sandbox_network net, const json_t *rules, const json_t *vmm);

/* Totals of a firewall-get reply's counters for /metrics: packets that
 * passed and that dropped, both directions, and flows cut. */
struct fw_totals {
	uint64_t pass_packets, drop_packets, flows_cut;
};
void firewall_totals_add(const json_t *vmm, struct fw_totals *t);

#endif

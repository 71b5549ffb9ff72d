/*
 * version: kiln's one version string. Every program says it: kiln-vmm
 * --version and the snapshot header (a snapshot is restored only by the
 * kiln version that took it), kilnd --version and GET /v1/health, the
 * guest agent's info.agent_version. A packager may set it with
 * -DKILN_VERSION='"x.y.z"' (the same for every program, or snapshots
 * and the agent's info disagree with the daemon).
 */
#ifndef KILN_VERSION_H
#define KILN_VERSION_H

#ifndef KILN_VERSION
#define KILN_VERSION "0.1.0"
#endif

#endif

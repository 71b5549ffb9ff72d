/* kiln's version: printed by --version, written into snapshots (a snapshot
 * is restored only by the kiln version that took it). */
#ifndef KILN_VERSION_H
#define KILN_VERSION_H

#define KILN_VERSION "0.1.0"

#endif

/* Image digests over nettle's SHA-256; see digest.h. */
#include "lib/digest/digest.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void digest_hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[DIGEST_HEX_LEN])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * SHA256_DIGEST_SIZE] = '\0';
}

void digest_str(const uint8_t d[SHA256_DIGEST_SIZE], char out[DIGEST_STR_LEN])
{
	memcpy(out, "sha256:", 7);
	digest_hex(d, out + 7);
}

int digest_fd(int fd, char out[DIGEST_STR_LEN])
{
	uint8_t buf[1u << 16], d[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;

	sha256_init(&h);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		sha256_update(&h, (size_t)n, buf);
	}
	sha256_digest(&h, sizeof(d), d);
	digest_str(d, out);
	return 0;
}

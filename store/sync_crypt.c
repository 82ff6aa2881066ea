/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sync_crypt.c: the key of -o sync_key, and what it seals.
 *
 * With a key, what PostgreSQL holds of a commit is ciphertext: each part
 * of an entry is sealed with XChaCha20-Poly1305 (libsodium's AEAD, a
 * random 24-byte nonce per part, so that nonces never repeat across
 * machines sharing the key), bound to what names it in the log (the
 * machine, its revision, the part's number: a part moved to another row
 * does not open). The log keeps in the clear only what the sync needs to
 * order and find entries: their sequence numbers, machine ids and
 * revision numbers, sizes, and for `convfs forget --task` a keyed tag of
 * the task (BLAKE2b under the key), not its id.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/sync_internal.h"
#include "store/util.h"

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_ok = -1;

static void sodium_start(void)
{
	sodium_ok = sodium_init() < 0 ? -1 : 0;
}

static int sodium_ready(void)
{
	pthread_once(&sodium_once, sodium_start);
	if (sodium_ok < 0)
		log_err("sync: cannot start libsodium");
	return sodium_ok < 0 ? -EIO : 0;
}

int sync_seal(const unsigned char *key, const void *p, size_t n, const void *ad, size_t ad_len, unsigned char *out)
{
	unsigned long long clen = 0;

	if (sodium_ready() < 0)
		return -EIO;
	randombytes_buf(out, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &clen, p, n, ad,
						   ad_len, NULL, out, key);
	return 0;
}

int sync_open(const unsigned char *key, const unsigned char *p, size_t n, const void *ad, size_t ad_len, void *out)
{
	unsigned long long mlen = 0;

	if (sodium_ready() < 0)
		return -EIO;
	if (n < SYNC_SEAL_EXTRA)
		return -EBADMSG;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(out, &mlen, NULL, p + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
						       n - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, ad, ad_len, p,
						       key) != 0)
		return -EBADMSG;
	return 0;
}

void sync_tag(const unsigned char *key, const char *text, char out[33])
{
	unsigned char h[16];

	if (sodium_ready() < 0) {
		snprintf(out, 33, "%s", "");
		return;
	}
	crypto_generichash(h, sizeof(h), (const unsigned char *)text, strlen(text), key, SYNC_KEY_SIZE);
	sodium_bin2hex(out, 33, h, sizeof(h));
}

int store_sync_key_load(const char *path, unsigned char key[STORE_SYNC_KEY_SIZE])
{
	unsigned char buf[130];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		log_err("sync: cannot open the key file '%s': %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		log_err("sync: the key file '%s' is %s: make it a file only its owner reads (chmod 600)", path,
			S_ISREG(st.st_mode) ? "open to other users" : "not a regular file");
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf));
	e = errno;
	close(fd);
	if (n < 0) {
		log_err("sync: cannot read the key file '%s': %s", path, strerror(e));
		return -e;
	}
	len = (size_t)n;
	if (len == STORE_SYNC_KEY_SIZE) {
		memcpy(key, buf, STORE_SYNC_KEY_SIZE);
		sodium_memzero(buf, sizeof(buf));
		return 0;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len == 2 * STORE_SYNC_KEY_SIZE && sodium_ready() == 0 &&
	    sodium_hex2bin(key, STORE_SYNC_KEY_SIZE, (const char *)buf, len, NULL, NULL, NULL) == 0) {
		sodium_memzero(buf, sizeof(buf));
		return 0;
	}
	sodium_memzero(buf, sizeof(buf));
	log_err("sync: the key file '%s' holds neither 32 bytes nor 64 hex digits (make one with: "
		"head -c 32 /dev/urandom > FILE)", path);
	return -EINVAL;
}

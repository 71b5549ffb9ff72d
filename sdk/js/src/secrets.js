// kiln.secrets: named secrets the egress proxy injects into the HTTP
// requests a sandbox's firewall `http` rules allow ("inject": [{"header":
// "authorization", "secret": "github", "format": "Bearer {}"}]; docs/api.md,
// "Secrets"). A value goes in and never comes back: every answer is
// metadata (name, owner, created, updated). A secret is its owner's (the
// client's uid); root may pass { owner: UID } to act on another uid's.
import { seg } from './transport.js';

export class Secrets {
  constructor(kiln) { this.t = kiln.transport; }

  /** PUT /v1/secrets/{name}: create or replace; resolves to its metadata.
   * value: 1..16384 bytes without NUL, CR or LF (BadFieldError, TooLargeError). */
  set(name, value, opts = {}) {
    if (typeof value !== 'string') throw new TypeError('secrets.set: the value is a string');
    return this.t.json('PUT', `/v1/secrets/${seg(name)}`, { query: { owner: opts.owner }, json: { value } });
  }

  /** GET /v1/secrets: the client's secrets (root: every owner's), metadata only. */
  async list(opts = {}) { return (await this.t.json('GET', '/v1/secrets', { query: { owner: opts.owner } })).secrets; }

  /** GET /v1/secrets/{name}: its metadata (NotFoundError if none). */
  get(name, opts = {}) { return this.t.json('GET', `/v1/secrets/${seg(name)}`, { query: { owner: opts.owner } }); }

  /** DELETE /v1/secrets/{name} (NotFoundError if none). */
  async delete(name, opts = {}) { await this.t.json('DELETE', `/v1/secrets/${seg(name)}`, { query: { owner: opts.owner } }); }
}

// A fake kilnd for the unit tests: a Unix-socket server in the test process
// that parses each request (head, Content-Length or chunked body) and hands
// it to a handler that writes raw bytes back, so framing, NDJSON streams,
// hostile answers and dying servers can all be scripted.
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function jsonResponse(status, obj, extra = '') {
  const body = Buffer.from(obj === undefined ? '' : JSON.stringify(obj));
  const reason = { 200: 'OK', 201: 'Created', 204: 'No Content' }[status] || 'Error';
  return Buffer.concat([
    Buffer.from(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n${extra}\r\n`),
    body,
  ]);
}

export function errorResponse(status, code, message) {
  return jsonResponse(status, { error: { code, message } });
}

export function chunkedHead(status = 200, type = 'application/x-ndjson') {
  return `HTTP/1.1 ${status} OK\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
}

export function chunk(data) {
  const b = Buffer.from(data);
  return Buffer.concat([Buffer.from(b.length.toString(16) + '\r\n'), b, Buffer.from('\r\n')]);
}

export const LAST_CHUNK = '0\r\n\r\n';

function parseRequest(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const [method, target] = lines[0].split(' ');
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let rest = buf.subarray(end + 4);
  let body;
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (rest.length < n) return null;
    body = rest.subarray(0, n);
  } else if (headers['transfer-encoding'] === 'chunked') {
    const parts = [];
    for (;;) {
      const nl = rest.indexOf('\r\n');
      if (nl < 0) return null;
      const n = parseInt(rest.subarray(0, nl).toString(), 16);
      if (rest.length < nl + 2 + n + 2) return null;
      if (n === 0) break;
      parts.push(rest.subarray(nl + 2, nl + 2 + n));
      rest = rest.subarray(nl + 2 + n + 2);
    }
    body = Buffer.concat(parts);
  } else {
    body = Buffer.alloc(0);
  }
  const u = new URL(target, 'http://kiln');
  return { method, target, path: u.pathname, query: u.searchParams, headers, body, json: () => JSON.parse(body.toString()) };
}

/**
 * startFake(handler): handler(req, sock) writes the answer (sock.end(...))
 * or leaves the socket open. Resolves {socket, requests, close()}.
 */
export function startFake(handler) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-fake-'));
  const sockPath = path.join(dir, 'kiln.sock');
  const requests = [];
  const conns = new Set();
  const server = net.createServer((sock) => {
    conns.add(sock);
    sock.on('close', () => conns.delete(sock));
    sock.on('error', () => {});
    let buf = Buffer.alloc(0);
    let handled = false;
    sock.on('data', (d) => {
      if (handled) return;
      buf = Buffer.concat([buf, d]);
      const req = parseRequest(buf);
      if (!req) return;
      handled = true;
      requests.push(req);
      Promise.resolve(handler(req, sock)).catch((e) => { sock.destroy(); console.error('fake handler:', e); });
    });
  });
  return new Promise((resolve) => {
    server.listen(sockPath, () => resolve({
      socket: sockPath,
      requests,
      close: () => new Promise((r) => {
        for (const c of conns) c.destroy();
        server.close(() => { fs.rmSync(dir, { recursive: true, force: true }); r(); });
      }),
    }));
  });
}

import type { ServerResponse } from 'node:http';
import { type ErrorCode, openaiErrorBody, statusOf } from '../errors.js';

/** Sends an OpenAI-shaped error. No attribution headers: an error names no provider. */
export function sendError(res: ServerResponse, code: ErrorCode, message: string, param: string | null = null, extra?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = openaiErrorBody(code, message, param);
  res.writeHead(statusOf(code), {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendBody(res, status, JSON.stringify(value), 'application/json');
}

export function sendBody(res: ServerResponse, status: number, body: string, contentType: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

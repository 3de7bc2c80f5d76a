import axios, { AxiosError, type AxiosInstance, type AxiosRequestConfig } from "axios";
import { AssessdError } from "./errors.js";
import { operationTable, type OperationId, type Operations } from "./operations.js";

/** A bearer token, or a function returning one (called for every request). */
export type TokenSource = string | (() => string | Promise<string>);

/** Options of createClient. */
export interface ClientOptions {
  /** The API's base URL, e.g. https://assessd.example.com. */
  baseURL: string;
  /** An API key (ak_...). */
  apiKey?: string;
  /** An OAuth access token, or a function returning the current one. */
  accessToken?: TokenSource;
  /**
   * Opt-in automatic refresh: called once when a request is answered 401
   * (an expired access token); it returns a fresh access token and the
   * request is retried with it. See oauth.refreshingTokenSource.
   */
  refresh?: () => Promise<string>;
  /** An axios instance to send requests with (defaults to a new one). */
  axios?: AxiosInstance;
}

/** The SDK client: one method per API operation. */
export type AssessdClient = Operations;

/** Creates a client authenticated with an API key or an access token. */
export function createClient(options: ClientOptions): AssessdClient {
  const http = options.axios ?? axios.create();
  let token: TokenSource | undefined = options.apiKey ?? options.accessToken;
  const bearer = async () => (typeof token === "function" ? await token() : token);

  async function send(id: OperationId, params: Record<string, unknown> = {}, config: AxiosRequestConfig = {}, retried = false): Promise<unknown> {
    const op = operationTable[id];
    const rest: Record<string, unknown> = { ...params };
    let url = op.path as string;
    for (const name of op.pathParams) {
      url = url.replace(`{${name}}`, encodeURIComponent(String(rest[name])));
      delete rest[name];
    }
    const query: Record<string, unknown> = {};
    for (const name of op.queryParams) {
      if (rest[name] !== undefined) query[name] = rest[name];
      delete rest[name];
    }
    const headers: Record<string, string> = {};
    const auth = await bearer();
    if (auth && !url.startsWith("/oauth/token") && !url.startsWith("/oauth/revoke") && !url.startsWith("/oauth/introspect")) {
      headers.Authorization = `Bearer ${auth}`;
    }
    let data: unknown;
    if (op.body === "json") {
      data = rest;
      headers["Content-Type"] = "application/json";
    } else if (op.body === "form") {
      data = new URLSearchParams(Object.entries(rest).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    }
    try {
      const res = await http.request({
        baseURL: options.baseURL,
        ...config,
        url,
        method: op.method,
        params: { ...query, ...config.params },
        // Binary answers (a PDF, a zip) arrive as an ArrayBuffer.
        ...(op.response === "binary" ? { responseType: "arraybuffer" as const } : {}),
        // A body the caller gives in config (a zip to import) is sent as is.
        data: config.data ?? data,
        headers: { ...headers, ...(config.headers as Record<string, string> | undefined) },
      });
      return op.response === "binary" ? arrayBuffer(res.data) : res.data;
    } catch (err) {
      if (!(err instanceof AxiosError)) throw err;
      if (err.response?.status === 401 && options.refresh && !retried) {
        token = await options.refresh();
        return send(id, params, config, true);
      }
      throw new AssessdError(err);
    }
  }

  const client: Record<string, unknown> = {};
  for (const id of Object.keys(operationTable) as OperationId[]) {
    client[id] = (params?: Record<string, unknown>, config?: AxiosRequestConfig) => send(id, params, config);
  }
  return client as unknown as AssessdClient;
}

/** The bytes of a binary answer as an ArrayBuffer: browsers give one, Node a Buffer (a view of a shared pool). */
function arrayBuffer(data: ArrayBuffer | Uint8Array): ArrayBuffer {
  if (data instanceof ArrayBuffer) return data;
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

import type { AxiosError } from "axios";
import type { Status } from "./types.js";

/** A field the API refused, from a google.rpc.BadRequest detail. */
export interface FieldViolation {
  field: string;
  description: string;
}

/**
 * AssessdError is how every SDK method rejects on a non-2xx answer: the HTTP
 * status, the google.rpc.Status fields (or the OAuth error of the /oauth
 * endpoints), and the original axios error.
 */
export class AssessdError extends Error {
  /** The HTTP status, or 0 when no answer arrived. */
  readonly status: number;
  /** The gRPC/Connect code number of the body, if any. */
  readonly code?: number;
  /** The stable UPPER_SNAKE reason of the google.rpc.ErrorInfo detail. */
  readonly reason?: string;
  /** The fields the API refused. */
  readonly fieldViolations: FieldViolation[];
  /** The error details as the API sent them. */
  readonly details: Status["details"];
  /** RFC 6749 error code of the OAuth endpoints (invalid_grant, ...). */
  readonly oauthError?: string;
  /** The axios error this wraps. */
  readonly axiosError: AxiosError;

  constructor(err: AxiosError) {
    const body = (err.response?.data ?? {}) as Partial<Status> & { error?: string; error_description?: string };
    super(body.message ?? body.error_description ?? body.error ?? err.message);
    this.name = "AssessdError";
    this.status = err.response?.status ?? 0;
    this.code = body.code;
    this.details = body.details ?? [];
    this.oauthError = body.error;
    this.axiosError = err;
    this.reason = this.details?.find((d) => d["@type"].endsWith("google.rpc.ErrorInfo"))?.reason as string | undefined;
    const badRequest = this.details?.find((d) => d["@type"].endsWith("google.rpc.BadRequest"));
    this.fieldViolations = (badRequest?.fieldViolations as FieldViolation[] | undefined) ?? [];
  }
}

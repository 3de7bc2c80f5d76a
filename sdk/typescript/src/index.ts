export { createClient, type AssessdClient, type ClientOptions, type TokenSource } from "./client.js";
export { AssessdError, type FieldViolation } from "./errors.js";
export { paginate, type ItemOf } from "./paginate.js";
export { authorizeUrl, exchangeCode, refreshTokens, revokeToken, refreshingTokenSource, type OAuthClient, type TokenResponse } from "./oauth.js";
export { operationTable, type OperationId, type Operations } from "./operations.js";
export type { Params, Result, Status } from "./types.js";
export type { components, operations, paths } from "./schema.js";

// auth/: callers who sign in with a JWT their identity provider issued, beside API keys.
// The issuers the serving generation trusts and their signing keys (fetched off the request
// path, kept across reloads and outages), the tokens already verified (until they expire),
// and the reading of a token's claims as a team, a principal with its own limits, narrower
// model and tool lists, and an admin role. Imports config/ (the `auth` block's types) and
// governance/ (the principal and the policy it is mapped under); server/ builds the one
// JwtAuthority and request/ asks it. See docs/decisions/0039-callers-who-sign-in.md.

export { audienceAccepted, audienceRefusal, type Issuer, JwtAuthority, type TokenVerdict, type VerifiedToken } from './authority.js';
export { type JwksHooks, MAX_JWKS_BYTES } from './jwks.js';
export { adminRoleOf, principalIdOf, type Signed, signedInPrincipal } from './principal.js';
export { claimAt, claimValues, looksLikeJwt, MAX_TOKEN_BYTES } from './token.js';

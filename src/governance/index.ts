// governance/: what a request may spend and what it cost. A leaf: it never imports live/
// or config/; the pricing table arrives as a parameter from the generation that served
// the request (DESIGN.md invariant 4). Its units (TokenUsage, PriceTable) are types from
// providers/, which imports no other folder.
export { priceUsage } from './pricing.js';

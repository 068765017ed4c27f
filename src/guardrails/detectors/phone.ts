// Telephone numbers, in the forms people write them: international (E.164, `+` and a country
// code, spaces, dots, dashes or a parenthesised area code between groups), North American
// national ((555) 123-4567, 555-123-4567), and the trunk-prefixed national forms of most
// other countries (030 1234567, 020 7946 0958, 06 12 34 56 78). A run of digits alone is not
// a phone number here: it needs a `+`, the NANP shape or a leading trunk 0 with separators,
// and the digit counts each form allows, which leaves out dates (8 digits or fewer), card
// numbers (13 or more digits in one run) and most order numbers.

import { type Finding, scanCandidates } from './finding.js';

// Every quantifier is bounded, so one attempt costs at most the longest form's length.
const INTERNATIONAL = /(?<![\w+])\+[1-9][\d ().-]{5,22}\d(?!\w)/g;
const NANP = /(?<![\w+(.-])(?:1[ .-])?(?:\(\d{3}\) ?|\d{3}([ .-]))\d{3}([ .-])\d{4}(?!\w|[.-]\d)/g;
const TRUNK = /(?<![\w+.-])0\d{1,4}(?:([ -])\d{2,8}(?:\1\d{2,8}){0,3}|(?:\.\d{2}){4})(?!\w|[.-]\d)/g;

/** The longest text any of the three forms can match. */
export const PHONE_MAX_CHARS = 41;

export function findPhones(text: string, out: Finding[]): void {
  const push = (m: RegExpExecArray) => out.push({ entity: 'phone', start: m.index, end: m.index + m[0].length }) > 0;
  scanCandidates(text, INTERNATIONAL, (m) => plausibleInternational(m[0]) && push(m));
  scanCandidates(text, NANP, (m) => {
    // Area code and exchange never start with 0 or 1; the separators agree unless the area code is in parentheses.
    const digits = m[0].replace(/\D/g, '').slice(-10);
    if (digits[0]! < '2' || digits[3]! < '2') return false;
    return (m[1] === undefined || m[1] === m[2]) && push(m);
  });
  scanCandidates(text, TRUNK, (m) => {
    // National significant numbers with their trunk 0 run 10 to 12 digits (UK 11, France 10, Germany 10–12).
    const digits = m[0].replace(/\D/g, '').length;
    return digits >= 10 && digits <= 12 && push(m);
  });
}

// E.164 allows at most 15 digits; fewer than 8 with the country code is no dialable number.
// Separators stand alone (one between groups, or a parenthesised group of 1–4 digits, once).
function plausibleInternational(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, '').length;
  if (digits < 8 || digits > 15) return false;
  const bare = candidate.replace(/ ?\(\d{1,4}\) ?/, ' ');
  if (bare.includes('(') || bare.includes(')')) return false;
  return !/[ .-]{2}/.test(bare);
}

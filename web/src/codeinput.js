// A code typed into one of the page's fields, checked for typos before anything is sent, as the CLI does
// (typos.js, p2pd/pairing/typos.py): a likely typo is said under the field ("did you mean …?") with a button for
// each suggestion; submitting the same code again uses it as typed (the CLI's prompt: typing it again keeps
// it). A code that does not parse at all is left to the caller, whose error says what is wrong with it.

import { parseCode } from './codes.js';
import { checkTypos } from './typos.js';

const refused = new Map(); // field id → the code last refused there (normalized)

/** The text to use from `input`, or null when it looks mistyped (said in `hint`; `resubmit` sends the form). */
export function typedCode(input, hint, resubmit) {
  hint.hidden = true;
  hint.replaceChildren();
  input.removeAttribute('aria-invalid');
  let code;
  try {
    code = parseCode(input.value);
  } catch {
    return input.value;
  }
  if (refused.get(input.id) === code.toString()) return input.value; // asked again as it was: meant
  try {
    checkTypos(code);
    return input.value;
  } catch (error) {
    if (error.reason !== 'typo') throw error;
    refused.set(input.id, code.toString());
    const buttons = error.suggestions.map((suggestion) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'secondary';
      button.textContent = `Use ${suggestion}`;
      button.dataset.code = suggestion;
      button.addEventListener('click', () => {
        input.value = suggestion;
        resubmit();
      });
      return button;
    });
    const text = document.createElement('span');
    text.textContent = `${error.message} To use ${code} as typed, press the button again.`;
    const row = document.createElement('span');
    row.className = 'buttons';
    row.append(...buttons);
    hint.append(text, row);
    hint.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    return null;
  }
}

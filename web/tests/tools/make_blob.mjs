// Reads a JSON document on stdin and writes the blob the page would make for it to stdout (for the Python test
// that checks p2pd.blob reads what the browser sends).
import { encodeBlob } from '../../src/blob.js';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { blob } = await encodeBlob(new Uint8Array(Buffer.concat(chunks)));
process.stdout.write(blob);

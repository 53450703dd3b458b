// After `jupyter labextension build`: record which source the bundle was built from
// (tests/test_highlight.py compares it with the source, so a stale bundle fails the tests).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

const files = ['package.json', 'package-lock.json', ...readdirSync('src').sort().map(name => `src/${name}`)];
const hash = createHash('sha256');
for (const file of files) {
  hash.update(`${file}\n`).update(readFileSync(file));
}
writeFileSync('mlsql-ray-lang/source.sha256', `${hash.digest('hex')}\n`);

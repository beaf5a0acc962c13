// A second test reporter (scripts/test.mjs): one line per failed test, so that the end of a long run's
// output says what failed. CI shows only the tail of the output; the TAP stream keeps the details.
export default async function* failureSummary(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    const error = details?.error;
    const message = String(error?.cause?.message ?? error?.message ?? 'failed')
      .split('\n')
      .slice(0, 6)
      .join(' ⏎ ')
      .slice(0, 600);
    // A suite that failed only because a test inside it failed adds nothing to that test's line.
    if (details?.type === 'suite' && /\d+ subtests? failed/.test(message)) continue;
    yield `${file?.replace(`${process.cwd()}/`, '') ?? '?'} › ${name}: ${message}\n`;
  }
}

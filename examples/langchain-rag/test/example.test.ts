import { describe, expect, it } from 'vitest';
import { runExample } from '../src/main.js';

describe('examples/langchain-rag', () => {
  it('runs offline and its answers show provenance headers with fetch dates', async () => {
    const { answers, output } = await runExample(() => {});
    expect(answers).toHaveLength(2);
    for (const answer of answers) {
      expect(answer).toMatch(/^Q: \S+ \S+$/m);
      expect(answer).toMatch(
        /A \(echo model\): 3 evidence block\(s\); instructions came from 1 system message\(s\)\./,
      );
      expect(answer).toMatch(/^ {2}Source: http:\/\/127\.0\.0\.1:\d+\/\S* \(.+\)$/m);
      expect(answer).toMatch(/^ {2}Fetched: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m);
      expect(answer).toMatch(/^ {2}Section: .+$/m);
    }
    // The echo model quotes the evidence block holding the asked phrase. Ranking among the
    // other blocks may vary between runs (chunk text carries the sim's random port in links),
    // so find the quoted block by number and compare its fetch time across the edit.
    const quotedFetch = answers.map((answer) => {
      const asked = /^Q: (.+)$/m.exec(answer)![1]!;
      const quote = /^ {2}Quote \[(\d+)\]: "(.+)"$/m.exec(answer);
      expect(quote, `no quote in:\n${answer}`).not.toBeNull();
      expect(quote![2]!.toLowerCase()).toContain(asked);
      const fetchedLines = [...answer.matchAll(/^ {2}Fetched: (\S+)$/gm)].map((m) => m[1]!);
      return Date.parse(fetchedLines[Number(quote![1]) - 1]!);
    });
    // After the edit and republish, the quoted evidence is the new version, fetched later.
    expect(quotedFetch[1]!).toBeGreaterThan(quotedFetch[0]!);
    expect(output).toMatch(/published 8 page\(s\), epoch 1/);
    expect(output).toMatch(/published 1 page\(s\), epoch 2/);
  });
});

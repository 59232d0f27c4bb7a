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
    // After the edit and republish, the top evidence is the new version of the edited page.
    const fetched = answers.map((a) => /^ {2}Fetched: (\S+)$/m.exec(a)![1]!);
    expect(Date.parse(fetched[1]!)).toBeGreaterThan(Date.parse(fetched[0]!));
    for (const answer of answers) {
      const asked = /^Q: (.+)$/m.exec(answer)![1]!;
      expect(answer).toMatch(/^ {2}Quote \[1\]: ".+"$/m);
      expect(
        answer
          .split('\n')
          .find((l) => l.startsWith('  Quote'))!
          .toLowerCase(),
      ).toContain(asked);
    }
    expect(output).toMatch(/published 8 page\(s\), epoch 1/);
    expect(output).toMatch(/published 1 page\(s\), epoch 2/);
  });
});

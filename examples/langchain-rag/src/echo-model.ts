import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';

/**
 * A deterministic stand-in for a real chat model (no network, no API key): it "answers" by
 * listing the provenance headers of the evidence it was given, and says which message carried
 * the instructions. Swap in `ChatOpenAI`, `ChatAnthropic`, ... in a real app.
 */
export class EchoEvidenceChatModel extends BaseChatModel {
  _llmType(): string {
    return 'echo-evidence';
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const text = (m: BaseMessage) =>
      typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    const system = messages.filter((m) => m.getType() === 'system').map(text);
    const human = messages.filter((m) => m.getType() === 'human').map(text);
    const question =
      human.find((h) => h.startsWith('Question: '))?.slice('Question: '.length) ?? '';
    const evidence = human.find((h) => h.startsWith('Evidence:')) ?? '';
    const headers = evidence
      .split('\n')
      .filter((line) =>
        /^(Source|Fetched|Section|Revalidated): |^STALE since |^LIVE FETCH FAILED/.test(line),
      );
    const blocks = (evidence.match(/^<<<EVIDENCE \d+ /gm) ?? []).length;
    // A "quote": the first evidence sentence that contains the question's words.
    const contents = evidence.split(/^Content \(untrusted[^\n]*\n/m).slice(1);
    const needle = question.toLowerCase();
    let quote: string | undefined;
    contents.forEach((content, i) => {
      if (quote !== undefined) return;
      const sentence = content
        .split(/(?<=[.!?])\s+|\n/)
        .find((s) => needle !== '' && s.toLowerCase().includes(needle));
      if (sentence !== undefined) quote = `  Quote [${i + 1}]: "${sentence.trim().slice(0, 160)}"`;
    });
    const answer = [
      `Q: ${question}`,
      `A (echo model): ${blocks} evidence block(s); instructions came from ${system.length} system message(s).`,
      ...headers.map((h) => `  ${h}`),
      quote ?? '  Quote: (no evidence sentence contains the question)',
    ].join('\n');
    return { generations: [{ text: answer, message: new AIMessage(answer) }] };
  }
}

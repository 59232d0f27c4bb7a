import { MemoryConnector } from '@ragfresh/connector-memory';
import { CAPABILITY_DEFAULTS } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';

describe('capability defaults (the base class fills what a connector leaves out)', () => {
  it('fills the documented defaults and freezes the result', () => {
    // Fields left undefined reach the base class as absent: it fills them with the defaults.
    const c = new MemoryConnector({
      capabilities: {
        store: 'minimal',
        promotion: 'gap',
        flagPromotion: 'gap',
        visibility: undefined as never,
        maxWriteBatch: undefined as never,
        epochInStore: undefined as never,
        idForm: undefined as never,
        fencing: undefined as never,
        scan: undefined as never,
      },
    });
    expect(c.capabilities).toEqual({
      store: 'minimal',
      promotion: 'gap',
      flagPromotion: 'gap',
      visibility: { mode: 'immediate' },
      maxWriteBatch: 100,
      epochInStore: false,
      idForm: 'chunk-id',
      epochClaim: 'exclusive',
      scan: false,
      // Derived from the hooks the connector implements (_readFence/_raiseFence, _forNamespace,
      // _readEpochSpace, _dropNamespace).
      fencing: 'client',
      namespaces: true,
      epochSpace: true,
      dropNamespace: true,
    });
    expect(CAPABILITY_DEFAULTS).toEqual({
      visibility: { mode: 'immediate' },
      maxWriteBatch: 100,
      epochInStore: false,
      idForm: 'chunk-id',
      epochClaim: 'exclusive',
      scan: false,
    });
    expect(Object.isFrozen(c.capabilities)).toBe(true);
    expect(Object.isFrozen(c.capabilities.visibility)).toBe(true);
  });

  it('keeps what a connector declares, and validates the langchain entry', () => {
    const c = new MemoryConnector({
      capabilities: { langchain: { class: 'X (@example/x)', recall: 'lossy' } },
    });
    expect(c.capabilities.maxWriteBatch).toBe(500);
    expect(c.capabilities.epochInStore).toBe(true);
    expect(c.capabilities.langchain).toEqual({ class: 'X (@example/x)', recall: 'lossy' });
    expect(Object.isFrozen(c.capabilities.langchain)).toBe(true);
    expect(
      () =>
        new MemoryConnector({
          capabilities: { langchain: { class: '', recall: 'complete' } },
        }),
    ).toThrow(/langchain without a class name/);
  });

  it('epochSpace follows the hook unless declared false; true without the hook is refused', async () => {
    const off = new MemoryConnector({ capabilities: { epochSpace: false } });
    expect(off.capabilities.epochSpace).toBe(false);
    await off.open({ dimensions: 2 });
    await off.advanceEpoch(0, 1, { space: 'es_named' });
    expect(await off.readEpochSpace()).toBeUndefined();
    await off.close();
    // A memory connector without the hook (the base class's) cannot declare it.
    class NoSpaceHook extends MemoryConnector {}
    Object.defineProperty(NoSpaceHook.prototype, '_readEpochSpace', {
      value: Object.getPrototypeOf(MemoryConnector.prototype)._readEpochSpace,
    });
    expect(new NoSpaceHook().capabilities.epochSpace).toBe(false);
    expect(() => new NoSpaceHook({ capabilities: { epochSpace: true } })).toThrow(
      /declares epochSpace without implementing _readEpochSpace/,
    );
  });

  it('namespaces follows the hook unless declared false; true without the hook is refused', () => {
    expect(
      new MemoryConnector({ capabilities: { namespaces: false } }).capabilities.namespaces,
    ).toBe(false);
    class NoNamespaceHook extends MemoryConnector {}
    Object.defineProperty(NoNamespaceHook.prototype, '_forNamespace', {
      value: Object.getPrototypeOf(MemoryConnector.prototype)._forNamespace,
    });
    expect(new NoNamespaceHook().capabilities.namespaces).toBe(false);
    expect(() => new NoNamespaceHook({ capabilities: { namespaces: true } })).toThrow(
      /declares namespaces without implementing _forNamespace/,
    );
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { genAiSystem } from '../../src/telemetry/index.js';

describe('gen_ai.provider.name', () => {
  it('names each provider type as the OpenTelemetry conventions name its service', () => {
    assert.equal(genAiSystem('openai'), 'openai');
    assert.equal(genAiSystem('azure_openai'), 'azure.ai.openai');
    assert.equal(genAiSystem('anthropic'), 'anthropic');
    assert.equal(genAiSystem('gemini'), 'gcp.gemini');
    assert.equal(genAiSystem('vertex'), 'gcp.vertex_ai');
    assert.equal(genAiSystem('bedrock'), 'aws.bedrock');
  });
});

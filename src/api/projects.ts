/**
 * Projects and the caller (cube_lab/handlers/projects.py): who am I, and the
 * projects I belong to.
 */
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './request';

export type ProjectRole = 'owner' | 'member';

export interface ProjectMember {
  username: string;
  role: ProjectRole;
}

export interface Project {
  name: string;
  kind: 'personal' | 'team';
  description: string;
  role: ProjectRole;
  members: ProjectMember[];
  created_at: string;
}

export interface WhoAmI {
  user: string;
  backend: string;
  projects: Project[];
}

export function whoami(settings?: ServerConnection.ISettings) {
  return requestAPI<WhoAmI>('whoami', {}, settings);
}

export function listProjects(settings?: ServerConnection.ISettings) {
  return requestAPI<{ projects: Project[] }>('projects', {}, settings);
}
